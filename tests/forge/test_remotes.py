"""Remote policies: git on the host reaches only remotes a run may reach, pinned to the
address that was checked, following no redirect, with none of the host's credentials, and
(unless allowed) without git's own error text. Against real git and loopback servers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from golem.core.errors import GitRemoteError, RemoteRefused
from golem.core.network import NetworkConfig, RemotePolicy
from golem.forge import ForgeConfig, ForgeCredentials, GitAuth, GitHubConfig, GitRepo, git_auth
from golem.forge.remotes import parse_remote, pin_remote
from golem.testing.git_http_server import GitHttpServer
from tests.forge.conftest import seed_bare

TOKEN = "remote-policy-token-5b1e"  # noqa: S105 - a test token


def loopback_policy(port: int, **changes: object) -> RemotePolicy:
    """http to this machine's loopback on ``port`` only (what a test server needs)."""
    base: dict[str, object] = {
        "schemes": ["http"], "allow_cidrs": ["127.0.0.1/32"], "ports": [port],
    }  # fmt: skip
    return RemotePolicy.model_validate(base | changes)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[GitHttpServer]:
    seed_bare(tmp_path / "srv")
    with GitHttpServer(tmp_path / "srv", TOKEN) as server:
        yield server


class _Redirector(BaseHTTPRequestHandler):
    target = ""
    hits: list[str] = []  # noqa: RUF012 - one class per test, set by the fixture

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(302)
        self.send_header("Location", self.target + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: object) -> None:
        return


@pytest.mark.parametrize(
    ("url", "scheme", "host", "port"),
    [
        ("https://github.com/o/r.git", "https", "github.com", 443),
        ("http://127.0.0.1:8080/r.git", "http", "127.0.0.1", 8080),
        ("git@github.com:o/r.git", "ssh", "github.com", 22),
        ("ssh://git@[::1]:2222/r", "ssh", "::1", 2222),
        ("git+ssh://example.org/r", "ssh", "example.org", 22),
        ("/srv/repos/r.git", "file", "", 0),
        ("file:///srv/repos/r.git", "file", "", 0),
    ],
)
def test_remotes_are_read_as_git_reads_them(url: str, scheme: str, host: str, port: int) -> None:
    remote = parse_remote(url)
    assert (remote.scheme, remote.host, remote.port) == (scheme, host, port)


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("git://127.0.0.1/r.git", "schemes"),
        ("ext::sh -c touch% /tmp/pwned", "schemes"),
        ("fd::17/r", "schemes"),
        ("http://2130706433/r.git", "allow"),
        ("http://0x7f.1/r.git", "allow"),
        ("http://127.1/r.git", "allow"),
        ("https://EXAMPLE.org./r.git", "allow"),
        ("https://exa_mple.org/r.git", "allow"),
        ("https://example.org:99999/r.git", "ports"),
    ],
)
def test_remotes_golem_cannot_check_are_refused_by_their_spelling(url: str, rule: str) -> None:
    with pytest.raises(RemoteRefused) as refused:
        parse_remote(url)
    assert refused.value.rule == rule
    assert f"policy field repos.{rule}" in refused.value.message


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://127.0.0.1:8080/r.git", "schemes"),  # the user default: https only
        ("https://127.0.0.1/r.git", "allow_cidrs"),
        ("https://[::1]/r.git", "allow_cidrs"),
        ("https://[::ffff:127.0.0.1]/r.git", "allow_cidrs"),
        ("https://169.254.169.254/latest/meta-data", "allow_cidrs"),
        ("https://10.1.2.3/r.git", "allow_cidrs"),
        ("https://localhost/r.git", "allow_cidrs"),
        ("https://internal.test/r.git", "allow_cidrs"),  # a name that resolves to loopback
        ("https://example.org:8443/r.git", "ports"),
        ("git@github.com:o/r.git", "schemes"),
        ("/srv/repos/r.git", "schemes"),
    ],
)
async def test_the_default_policy_refuses_loopback_private_and_other_schemes(
    url: str, rule: str
) -> None:
    network = NetworkConfig(hosts={"internal.test": ["127.0.0.1"]})
    with pytest.raises(RemoteRefused) as refused:
        await pin_remote([url], RemotePolicy(), network)
    assert refused.value.rule == rule


async def test_a_denied_host_is_refused_before_it_is_resolved() -> None:
    policy = RemotePolicy(deny=[r"^evil\.example$"])
    with pytest.raises(RemoteRefused) as refused:
        await pin_remote(["https://evil.example/r.git"], policy)
    assert refused.value.rule == "deny"


async def test_git_is_pinned_to_the_checked_address(served: GitHttpServer, tmp_path: Path) -> None:
    """``repo.test`` exists only in golem's resolver (engine.network.hosts): git reaches it
    because golem pinned the name to the address it checked, not by asking DNS again."""
    port = int(served.url.rsplit(":", 1)[1])
    network = NetworkConfig(hosts={"repo.test": ["127.0.0.1"]})
    url = f"http://repo.test:{port}/origin.git"
    repo = GitRepo(
        tmp_path / "work", auth=GitAuth(TOKEN, f"http://127.0.0.1:{port}/"),
        remote_policy=loopback_policy(port), network=network,
    )  # fmt: skip
    with pytest.raises(GitRemoteError):  # the token's origin is 127.0.0.1, not repo.test
        await repo.clone_from(url)
    assert served.requests, "git reached the pinned address"
    assert all(request.authorization is None for request in served.requests)


async def test_clone_fetch_and_push_work_under_a_policy_with_the_runs_token(
    served: GitHttpServer, tmp_path: Path
) -> None:
    port = int(served.url.rsplit(":", 1)[1])
    url = served.url_for("origin.git")
    repo = GitRepo(tmp_path / "work", auth=GitAuth(TOKEN, url), remote_policy=loopback_policy(port))
    await repo.clone_from(url)
    await repo.checkout_branch("golem/t")
    (repo.path / "a.txt").write_text("a\n")
    await repo.commit_all("a", "Golem", "golem@example.invalid")
    await repo.push("golem/t")
    await repo.fetch(branch="golem/t")
    assert await repo.default_branch() == "main"
    answered = [request for request in served.requests if request.status == 200]
    assert answered
    assert all(r.authorization == served.expected_authorization() for r in answered)


async def test_a_redirect_to_an_address_the_policy_refuses_is_not_followed(
    served: GitHttpServer, tmp_path: Path
) -> None:
    handler = type("Redirect", (_Redirector,), {"target": served.url, "hits": []})
    redirector = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=redirector.serve_forever, daemon=True).start()
    try:
        port = redirector.server_address[1]
        repo = GitRepo(
            tmp_path / "work", remote_policy=loopback_policy(port, git_errors=True)
        )  # fmt: skip
        with pytest.raises(GitRemoteError):
            await repo.clone_from(f"http://127.0.0.1:{port}/origin.git")
    finally:
        redirector.shutdown()
        redirector.server_close()
    assert handler.hits, "git asked the allowed server"
    assert served.requests == [], "and never followed its redirect to the refused port"


async def test_git_error_text_is_withheld_unless_the_policy_allows_it(
    served: GitHttpServer, tmp_path: Path
) -> None:
    port = int(served.url.rsplit(":", 1)[1])
    missing = f"http://127.0.0.1:{port}/nothing-here.git"
    quiet = GitRepo(tmp_path / "quiet", remote_policy=loopback_policy(port))
    with pytest.raises(GitRemoteError) as withheld:
        await quiet.clone_from(missing)
    assert "withheld" in withheld.value.message
    assert "repos.git_errors" in withheld.value.message
    assert "git said" not in withheld.value.message
    assert withheld.value.output == ""
    loud = GitRepo(tmp_path / "loud", remote_policy=loopback_policy(port, git_errors=True))
    with pytest.raises(GitRemoteError) as told:
        await loud.clone_from(missing)
    assert "git said" in told.value.message


async def test_the_hosts_own_git_credentials_are_not_used_under_a_policy(
    served: GitHttpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host has a credential helper and a netrc for the server; a run under a policy
    (another tenant's, say) must reach it with none of them."""
    port = int(served.url.rsplit(":", 1)[1])
    home = tmp_path / "home"
    home.mkdir()
    (home / ".netrc").write_text(f"machine 127.0.0.1 login x-access-token password {TOKEN}\n")
    (home / ".netrc").chmod(0o600)
    helper = f"!f() {{ echo username=x-access-token; echo password={TOKEN}; }}; f"
    (home / ".gitconfig").write_text(f"[credential]\n\thelper = {helper}\n")
    monkeypatch.setenv("HOME", str(home))
    url = served.url_for("origin.git")
    host_repo = GitRepo(tmp_path / "host")
    await host_repo.clone_from(url)  # without a policy, the host's own credentials answer
    assert served.requests[-1].authorization == served.expected_authorization()
    before = len(served.requests)
    sealed = GitRepo(tmp_path / "sealed", remote_policy=loopback_policy(port))
    with pytest.raises(GitRemoteError):
        await sealed.clone_from(url)
    assert all(r.authorization is None for r in served.requests[before:])


async def test_a_tenants_git_uses_its_own_token_and_never_the_hosts_credentials(
    served: GitHttpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tenant's run (``host_credentials=False``) has no remote policy here, but the
    host's credential helper must still not answer for it."""
    home = tmp_path / "home"
    home.mkdir()
    helper = f"!f() {{ echo username=x-access-token; echo password={TOKEN}; }}; f"
    (home / ".gitconfig").write_text(f"[credential]\n\thelper = {helper}\n")
    monkeypatch.setenv("HOME", str(home))
    url = served.url_for("origin.git")
    with pytest.raises(GitRemoteError):
        await GitRepo(tmp_path / "anonymous", host_credentials=False).clone_from(url)
    assert all(request.authorization is None for request in served.requests)
    tenant = GitRepo(tmp_path / "tenant", auth=GitAuth(TOKEN, url), host_credentials=False)
    await tenant.clone_from(url)
    assert served.requests[-1].authorization == served.expected_authorization()


def test_a_tenants_token_goes_to_git_whatever_token_for_git_says() -> None:
    config = ForgeConfig(github=GitHubConfig(token_for_git=False))
    url = "https://github.com/octo/demo.git"
    tenant = ForgeCredentials(github="ghs_tenant", source="tenant acme", host_git=False)
    auth = git_auth(config, url, tenant)
    assert auth is not None
    assert auth.tokens.secrets() == ["ghs_tenant"]
    host = ForgeCredentials(github="ghs_host")
    assert git_auth(config, url, host) is None  # the host's own git credentials answer
    assert git_auth(config, "https://gitlab.com/octo/demo.git", tenant) is None
