"""A one-line report of a count."""


def report(count: int) -> str:
    """How many items there are."""
    return f"{count} items"
