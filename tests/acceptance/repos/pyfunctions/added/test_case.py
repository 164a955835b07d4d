from initials import initials


def test_lower_case_words():
    assert initials("ada lovelace") == "AL"
