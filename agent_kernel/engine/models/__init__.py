"""The models a run talks to: litellm for every provider, and the offline ``demo``."""
