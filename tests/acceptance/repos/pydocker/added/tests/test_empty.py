from inventory import total_quantity


def test_an_empty_inventory_holds_zero_pieces(conn):
    assert total_quantity(conn) == 0
