from slugkit import slugify


def test_single_spaces():
    assert slugify("Hello World") == "hello-world"
