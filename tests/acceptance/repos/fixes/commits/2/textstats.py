"""Counting things in text."""


def count_words(text):
    """How many words ``text`` has."""
    return len(text.split())


def count_lines(text):
    """How many lines ``text`` has."""
    return text.count("\n")


def initials(name):
    """The initials of ``name``, upper case."""
    return "".join(word[0] for word in name.split())
