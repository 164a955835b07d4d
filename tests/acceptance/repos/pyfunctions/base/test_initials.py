from initials import initials


def test_two_words():
    assert initials("Ada Lovelace") == "AL"
