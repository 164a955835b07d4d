"""Slugs for titles."""


def slugify(title: str) -> str:
    """``title`` in lower case, its words joined by dashes."""
    return "-".join(title.lower().split(" "))
