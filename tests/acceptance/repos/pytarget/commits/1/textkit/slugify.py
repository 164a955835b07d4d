"""Titles as URL slugs."""


def slugify(title: str) -> str:
    """A title as a URL slug: lower case, its words joined by dashes."""
    return "-".join(title.lower().split(" "))
