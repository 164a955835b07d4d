def count_words(text):
    """How many words ``text`` has."""
    return len(text.split(" "))
