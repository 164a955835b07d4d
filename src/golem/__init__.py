"""golem: unattended, one-shot coding agents in isolated devboxes."""

__version__ = "0.1.0"
__all__ = ["__version__"]
