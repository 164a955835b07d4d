from wordcount import count_words


def test_two_words() -> None:
    assert count_words("hello world") == 2
