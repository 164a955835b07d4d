"""A shop's catalogue, kept in PostgreSQL."""

import psycopg


def create_tables(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS items (id serial PRIMARY KEY, name text NOT NULL)")


def add_item(conn: psycopg.Connection, name: str) -> None:
    conn.execute("INSERT INTO items (name) VALUES (%s)", (name,))


def item_names(conn: psycopg.Connection) -> list[str]:
    """The names of the catalogue's items, in alphabetical order."""
    return [name for (name,) in conn.execute("SELECT name FROM items ORDER BY id")]
