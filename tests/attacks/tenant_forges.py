"""A server whose tenants each keep their own forge token on the loopback GitHub (fixtures)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from golem.store import SqlStore, TokenCipher
from golem.store.cipher import KEY_FILE
from golem.testing.github_server import GitHubServer, RecordedRequest, Reply, github_error
from tests.blueprint.repos import make_remote

TOKEN_A = "ghp_attackTenantA0123456789abcdefghij"  # noqa: S105 - test tokens

TOKEN_B = "ghp_attackTenantB0123456789abcdefghij"  # noqa: S105

SERVER_TOKEN = "ghp_attackServer0123456789abcdefghij"  # noqa: S105

KEY_ENV = "ATTACK_FORGE_CREDENTIALS_KEY"


class TenantGitHub(GitHubServer):
    """The loopback GitHub where each token reaches its own account's repositories only
    (``*``: every one), as fine-grained tokens do; another's answer 404, as on GitHub."""

    def __init__(self, reach: dict[str, str]) -> None:
        super().__init__()
        self.reach = reach

    def check(self, request: RecordedRequest) -> Reply | None:
        """401 for an unknown token, 404 for a repository beyond the token's reach."""
        given = request.headers.get("authorization", "")
        owner = self.reach.get(given.removeprefix("Bearer ").removeprefix("token "))
        if owner is None:
            return github_error(401, "Bad credentials" if given else "Requires authentication")
        parts = urlsplit(request.path).path.split("/")
        if parts[1:2] == ["repos"] and owner not in ("*", parts[2]):
            return github_error(404, "Not Found")
        return None


@pytest.fixture(scope="module")
def github() -> Iterator[TenantGitHub]:
    reach = {TOKEN_A: "octo-a", TOKEN_B: "octo-b", SERVER_TOKEN: "*"}
    with TenantGitHub(reach) as server:
        for owner in ("octo-a", "octo-b"):
            server.add_issue(f"{owner}/calculator", 1, "add() subtracts", body="See calculator.py.")
        server.ci = lambda repo, sha: [{"name": "test", "conclusion": "success"}]  # CI is green
        yield server


@pytest.fixture(scope="module")
def repos() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="golem-test-"))
    directory.chmod(0o755)
    for owner in ("octo-a", "octo-b"):
        (directory / owner).mkdir()
        make_remote(directory / owner)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def revealed(state_dir: Path, tenant: str) -> str | None:
    """The tenant's token as the server's store and key (variable, else file) open it."""

    async def reveal() -> str | None:
        store = await SqlStore.connect(f"sqlite:///{state_dir / 'golem.db'}", tenant=tenant)
        try:
            return await store.credentials.reveal(
                "github", TokenCipher(KEY_ENV, state_dir / KEY_FILE)
            )
        finally:
            await store.close()

    return asyncio.run(reveal())
