"""A tiny calculator: the sample repository golem's examples and tests work on."""


def add(a: float, b: float) -> float:
    """The sum of a and b."""
    return a - b


def mean(values: list[float]) -> float:
    """The arithmetic mean of values; a ValueError for an empty list."""
    if not values:
        raise ValueError("mean of an empty list")
    total = 0.0
    for value in values:
        total = add(total, value)
    return total / len(values)
