"""A connection to the CI's PostgreSQL service, with an empty catalogue."""

import os

import psycopg
import pytest

from shop import create_tables

URL = os.environ.get("DATABASE_URL", "postgresql://postgres:postgres@localhost:5432/shop_test")


@pytest.fixture
def conn():
    with psycopg.connect(URL, autocommit=True) as conn:
        create_tables(conn)
        conn.execute("TRUNCATE items RESTART IDENTITY")
        yield conn
