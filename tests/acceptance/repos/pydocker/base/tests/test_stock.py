from inventory import stock, total_quantity


def test_the_total_counts_every_piece(conn):
    stock(conn, "apple", 2)
    stock(conn, "fig", 3)
    assert total_quantity(conn) == 5
