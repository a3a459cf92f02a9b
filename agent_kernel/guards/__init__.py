"""What keeps a tool's work inside its bounds: the bubblewrap sandbox with its seccomp
filter and cgroup, the JavaScript runner, dangerous-command checks and the network
guard. Imports only ``core``."""
