"""An adversarial review of issue 14: unkind clients crossing its lines another way than
the tests of each part do, against a real server and real boxes."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import httpx
import pytest

from tests.service.served import Served, serving

pytestmark = pytest.mark.bwrap

LONGEST_NAME = 255  # NAME_MAX of Linux file systems


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("unkind") / "state") as server:
        yield server


@pytest.fixture
def acme(served: Served) -> Iterator[httpx.Client]:
    with served.client(served.key(f"t-{secrets.token_hex(4)}")) as client:
        yield client


@pytest.fixture
def session(acme: httpx.Client) -> Iterator[str]:
    made = acme.post("/v1/sessions", json={})
    assert made.status_code == 201, made.text
    yield made.json()["id"]
    acme.delete(f"/v1/sessions/{made.json()['id']}")


def test_an_upload_to_the_longest_legal_name_lands(acme: httpx.Client, session: str) -> None:
    name = "n" * LONGEST_NAME
    files = f"/v1/sessions/{session}/files"
    put = acme.put(files, params={"path": name}, content=b"whole")
    assert put.status_code == 204, put.text
    assert acme.get(files, params={"path": name}).content == b"whole"


@pytest.mark.parametrize(
    ("method", "route"),
    [("PUT", "files"), ("GET", "files"), ("PUT", "archive"), ("GET", "archive")],
)
def test_a_name_longer_than_the_file_system_takes_is_a_4xx(
    acme: httpx.Client, session: str, method: str, route: str
) -> None:
    path = "x" * (LONGEST_NAME + 1)
    body = b"" if method == "PUT" else None
    answer = acme.request(
        method, f"/v1/sessions/{session}/{route}", params={"path": path}, content=body
    )
    assert answer.json()["kind"] in ("PathRefused", "PathNotFound"), answer.text
