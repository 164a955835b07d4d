"""A PostgreSQL server for the tests, started with the docker SDK as testcontainers does:
the container run from ``postgres:16``, waited for until it accepts connections, removed
at the end. It shares the engine's host network and listens on 127.0.0.1:5432."""

import time

import docker
import psycopg
import pytest

from inventory import create_tables

IMAGE = "postgres:16"
URL = "postgresql://tester:secret@127.0.0.1:5432/inventory"


@pytest.fixture(scope="session")
def database_url():
    client = docker.from_env()
    container = client.containers.run(
        IMAGE,
        detach=True,
        network_mode="host",
        environment={
            "POSTGRES_USER": "tester",
            "POSTGRES_PASSWORD": "secret",
            "POSTGRES_DB": "inventory",
        },
    )
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                psycopg.connect(URL, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                container.reload()
                if container.status != "running" or time.monotonic() > deadline:
                    raise RuntimeError(container.logs(tail=20).decode())
                time.sleep(0.2)
        yield URL
    finally:
        container.remove(force=True)


@pytest.fixture
def conn(database_url):
    with psycopg.connect(database_url, autocommit=True) as conn:
        create_tables(conn)
        conn.execute("TRUNCATE items")
        yield conn
