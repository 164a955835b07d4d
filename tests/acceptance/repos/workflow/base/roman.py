NUMERALS = [(10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def to_roman(number):
    """``number`` (1 to 39) in Roman numerals."""
    out = ""
    for value, numeral in NUMERALS:
        if number >= value:
            out += numeral
            number -= value
    return out
