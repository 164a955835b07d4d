from textkit import slugify


def test_one_word() -> None:
    assert slugify("Hello") == "hello"


def test_two_words() -> None:
    assert slugify("Hello World") == "hello-world"


def test_slugify_two_spaces() -> None:
    assert slugify("Hello  World") == "hello-world"


def test_slugify_many_spaces() -> None:
    assert slugify("a   b") == "a-b"


def test_slugify_tab() -> None:
    assert slugify("a\tb") == "a-b"


def test_slugify_newline() -> None:
    assert slugify("a\nb") == "a-b"
