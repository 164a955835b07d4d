import pytest

from slugkit import slugify


@pytest.mark.parametrize("title", ["Hello  World", " Hello World ", "Hello\tWorld"])
def test_any_whitespace(title):
    assert slugify(title) == "hello-world"
