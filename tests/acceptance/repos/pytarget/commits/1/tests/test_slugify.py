from textkit import slugify


def test_one_word() -> None:
    assert slugify("Hello") == "hello"


def test_two_words() -> None:
    assert slugify("Hello World") == "hello-world"
