"""An inventory kept in PostgreSQL."""

import psycopg


def create_tables(conn: psycopg.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS items (name text PRIMARY KEY, quantity integer NOT NULL)"
    )


def stock(conn: psycopg.Connection, name: str, quantity: int) -> None:
    conn.execute("INSERT INTO items (name, quantity) VALUES (%s, %s)", (name, quantity))


def total_quantity(conn: psycopg.Connection) -> int:
    """How many pieces the inventory holds, all items together."""
    (total,) = conn.execute("SELECT sum(quantity) FROM items").fetchone()
    return total
