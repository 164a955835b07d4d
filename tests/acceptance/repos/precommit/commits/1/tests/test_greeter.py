from greeter import greet


def test_greet_names_the_person() -> None:
    assert greet("Ada").endswith("Ada")
