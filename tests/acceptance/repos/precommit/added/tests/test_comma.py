from greeter import greet


def test_greet_puts_a_comma_after_hello() -> None:
    assert greet("Ada") == "Hello, Ada"
