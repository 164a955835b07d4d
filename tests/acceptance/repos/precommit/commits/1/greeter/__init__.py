"""Greetings."""


def greet(name: str) -> str:
    """A greeting for ``name``."""
    return "Hello " + name
