from shop import add_item, item_names


def test_items_are_listed_alphabetically(conn):
    for name in ("pear", "apple", "fig"):
        add_item(conn, name)
    assert item_names(conn) == ["apple", "fig", "pear"]
