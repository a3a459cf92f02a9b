"""Subcommands of ``python -m agent_kernel``; see ``__main__.py``."""
