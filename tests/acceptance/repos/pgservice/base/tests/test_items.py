from shop import add_item, item_names


def test_added_items_are_listed(conn):
    add_item(conn, "apple")
    add_item(conn, "fig")
    assert sorted(item_names(conn)) == ["apple", "fig"]
