"""A `user` key tried as an attacker would, against a real `golem serve` on loopback: every
field of a box and of a call pushed past the role's policy, the server's own loopback
services asked for through a run's repository URL (or an issue URL), oversized bodies and
uploads, bad WebSocket messages. Each attempt fails (no box, no run, no call, no connection
to the loopback service) with an answer that names the rule it broke."""

from __future__ import annotations

import base64
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from golem.blueprint import RunRequest
from golem.core.errors import ForgeError, PolicyViolation
from golem.core.server_config import RolePolicy
from golem.core.spec import BoxSpec
from golem.forge.config import GitHubConfig
from golem.forge.github import GitHubForge
from golem.sandbox import ExecRequest
from golem.service.policy import CALL_RULES, RUN_RULES, SPEC_RULES, check_run, check_spec
from golem.testing.github_server import GitHubServer
from tests.service.served import Served, serving, unb64

USER = "server.policies.user"
needs_box = pytest.mark.bwrap


class Victim(ThreadingHTTPServer):
    """A loopback HTTP service the server must never be made to reach: it records every
    connection it accepts, whatever protocol then speaks."""

    def __init__(self, host: str, family: socket.AddressFamily) -> None:
        self.address_family = family
        self.seen: list[Any] = []
        super().__init__((host, 0), _Answer)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def process_request(self, request: Any, client_address: Any) -> None:
        self.seen.append(client_address)
        super().process_request(request, client_address)


class _Answer(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read ``Victim.seen``."""


@pytest.fixture(scope="module")
def victims() -> Iterator[tuple[Victim, Victim]]:
    four = Victim("127.0.0.1", socket.AF_INET)
    six = Victim("::1", socket.AF_INET6)
    yield four, six
    for victim in (four, six):
        victim.shutdown()
        victim.server_close()


def _config(victims: tuple[Victim, Victim], widened: bool) -> str:
    config = '[engine.network]\nhosts = {"repo.attack.test" = ["127.0.0.1"]}\n'
    if widened:  # every scheme and the victims' ports: only the addresses are left to refuse
        ports = [443, 80, 22, victims[0].port, victims[1].port]
        config += (
            '[server.policies.user]\nmax_body_bytes = "1m"\nmax_upload_bytes = "2m"\n'
            f'[server.policies.user.repos]\nschemes = ["https", "http", "ssh"]\nports = {ports}\n'
        )
    return config


@pytest.fixture(scope="module")
def plain(
    tmp_path_factory: pytest.TempPathFactory, victims: tuple[Victim, Victim]
) -> Iterator[Served]:
    """A server with the default policies."""
    state = tmp_path_factory.mktemp("plain") / "state"
    with serving(state, config=_config(victims, widened=False)) as server:
        yield server


@pytest.fixture(scope="module")
def widened(
    tmp_path_factory: pytest.TempPathFactory, victims: tuple[Victim, Victim]
) -> Iterator[Served]:
    """A server whose user role may use http and ssh remotes on any of the victims' ports,
    and sends bodies of 1 MiB and uploads of 2 MiB at most."""
    state = tmp_path_factory.mktemp("widened") / "state"
    with serving(state, config=_config(victims, widened=True)) as server:
        yield server


@pytest.fixture
def user(plain: Served) -> Iterator[httpx.Client]:
    with plain.client(plain.key("mallory")) as client:
        yield client


def refused(answer: httpx.Response, status: int, rule: str) -> str:
    """The answer's detail, once it is checked to be a refusal naming ``rule``."""
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    detail: str = answer.json()["detail"]
    assert rule in detail, detail
    return detail


# --- the policy knows every field --------------------------------------------------------


def test_every_field_of_a_box_a_call_and_a_run_has_a_rule() -> None:
    assert set(BoxSpec.model_fields) == set(SPEC_RULES)
    assert set(ExecRequest.model_fields) == set(CALL_RULES)
    assert set(RunRequest.model_fields) == set(RUN_RULES)


def test_a_field_the_policy_does_not_know_is_refused() -> None:
    class Grown(BoxSpec):
        novel: int = 0

    with pytest.raises(PolicyViolation, match="novel: the server has no rule"):
        check_spec(Grown(), {}, RolePolicy(), "user", "")

    class GrownRun(RunRequest):
        novel: int = 0

    trusted = RolePolicy(server_files=True)
    with pytest.raises(PolicyViolation, match="novel: the server has no rule"):
        check_run(GrownRun(repo="https://example.com/r.git", task="t"), trusted, "trusted", ())


# --- a box past the user's policy --------------------------------------------------------

ROOT = ["0", "0:0", "00:00", "1000:0", "root"]
CIDRS = ["127.0.0.0/8", "10.0.0.0/8", "169.254.0.0/16", "::1/128", "::ffff:127.0.0.1/128"]
BOXES: list[tuple[dict[str, Any], str]] = [
    *[({"user": spelled}, "root_user") for spelled in ROOT],
    *[
        ({"network": "filtered", "egress": {"allow_cidrs": [cidr]}}, "egress_cidrs")
        for cidr in CIDRS
    ],
    *[
        ({"network": "filtered", "egress": {"ports": [port]}}, "egress_ports")
        for port in (22, 6379)
    ],
    ({"max_output_bytes": "1t"}, "max_output_bytes"),
    ({"max_file_bytes": "1t"}, "max_file_bytes"),
    ({"max_takeback_bytes": "1t"}, "max_takeback_bytes"),
    ({"tmp_size": "1t"}, "max_tmp_size"),
    ({"workspace_size": "1t"}, "max_workspace_size"),
    ({"memory": "64g"}, "max_memory"),
    ({"pids": 100_000}, "max_pids"),
    ({"cpus": 64}, "max_cpus"),
    ({"timeout": 86400}, "max_timeout"),
    ({"idle_timeout": 86400}, "max_timeout"),
    ({"env": {"BIG": "x" * 70_000}}, "max_env_bytes"),
    ({"secrets": {"BIG": "x" * 70_000}}, "max_env_bytes"),
    ({"labels": {"note": "x" * 5000}}, "max_label_bytes"),
    ({"labels": {"golem.tenant": "victim"}}, "server_labels"),
    ({"labels": {"golem.run": "run-000000000000"}}, "server_labels"),
    ({"network": "host"}, "networks"),
    ({"image": "evil/image:latest"}, "images"),
    ({"workspace": "/"}, "host_workspace"),
    ({"read_only_root": False}, "writable_root"),
    ({"containers": True}, "containers"),
]


@needs_box
@pytest.mark.parametrize(("spec", "option"), BOXES)
def test_a_box_past_the_user_policy_is_refused_and_never_made(
    user: httpx.Client, spec: dict[str, Any], option: str
) -> None:
    refused(user.post("/v1/sessions", json={"spec": spec}), 403, f"{USER}.{option}")
    one_shot = user.post("/v1/exec", json={"request": {"cmd": "true"}, "spec": spec})
    refused(one_shot, 403, f"{USER}.{option}")
    assert user.get("/v1/sessions").json() == []


UNBOUNDED = [{"tmp_size": 0}, {"workspace_size": "0"}, {"memory": 0}]
"""Sizes that a tmpfs or Docker would take as no limit at all."""


@needs_box
@pytest.mark.parametrize("spec", UNBOUNDED)
def test_a_size_that_would_mean_no_limit_is_refused(
    user: httpx.Client, spec: dict[str, Any]
) -> None:
    answer = user.post("/v1/sessions", json={"spec": spec})
    refused(answer, 422, f"spec.{next(iter(spec))}: Input should be greater than or equal")
    assert user.get("/v1/sessions").json() == []


@needs_box
def test_egress_names_may_be_anything_but_the_proxy_still_refuses_loopback(
    user: httpx.Client,
) -> None:
    spec = {"network": "filtered", "egress": {"allow": [".*"]}}
    made = user.post("/v1/sessions", json={"spec": spec})
    assert made.status_code == 201, made.text
    session = made.json()["id"]
    try:
        # repo.attack.test is 127.0.0.1 in the server's [engine.network] hosts
        call = {"cmd": "curl -fsS -m 20 -o /dev/null http://repo.attack.test/; echo $?"}
        result = user.post(f"/v1/sessions/{session}/exec", json=call).json()
        assert unb64(result["stdout"]).strip().splitlines()[-1] != b"0"
        assert result["network"], result
        assert all(not event["allowed"] for event in result["network"])
        assert "address 127.0.0.1 in 127.0.0.0/8" in result["network"][0]["rule"]
    finally:
        user.delete(f"/v1/sessions/{session}")


# --- a call past the user's policy -------------------------------------------------------

CALLS: list[tuple[dict[str, Any], str]] = [
    ({"timeout": 86400}, "max_timeout"),
    ({"idle_timeout": 86400}, "max_timeout"),
    ({"return_files": [f"f{n}" for n in range(65)]}, "max_return_files"),
    ({"env": {"BIG": "x" * 70_000}}, "max_env_bytes"),
]


@pytest.fixture
def session(user: httpx.Client) -> Iterator[str]:
    made = user.post("/v1/sessions", json={})
    assert made.status_code == 201, made.text
    yield made.json()["id"]
    user.delete(f"/v1/sessions/{made.json()['id']}")


def _ran(user: httpx.Client, session: str) -> bool:
    probe = user.post(f"/v1/sessions/{session}/exec", json={"cmd": "test -e ran"}).json()
    return probe["exit_code"] == 0


@needs_box
@pytest.mark.parametrize(("fields", "option"), CALLS)
@pytest.mark.parametrize("route", ["exec", "exec/stream", "processes"])
def test_a_call_past_the_user_policy_is_refused_and_never_runs(
    user: httpx.Client, session: str, fields: dict[str, Any], option: str, route: str
) -> None:
    call = {"cmd": "touch ran", **fields}
    refused(user.post(f"/v1/sessions/{session}/{route}", json=call), 403, f"{USER}.{option}")
    assert not _ran(user, session)


@needs_box
def test_a_device_is_not_taken_back(plain: Served, user: httpx.Client, session: str) -> None:
    device = user.post(
        f"/v1/sessions/{session}/exec", json={"cmd": "true", "return_files": ["/dev/zero"]}
    )
    assert "not a regular file" in device.json()["detail"]
    download = user.get(f"/v1/sessions/{session}/files", params={"path": "/dev/zero"})
    assert "not a regular file" in download.json()["detail"]
    with plain.client() as anyone:
        assert anyone.get("/healthz").json()["status"] == "ok"
    assert (device.status_code, download.status_code) == (422, 422)
    assert "takeback.kind" in device.json()["detail"]


@needs_box
def test_a_huge_sparse_file_is_not_taken_back(user: httpx.Client, session: str) -> None:
    sparse = {"cmd": "truncate -s 1t /tmp/huge", "return_files": ["/tmp/huge"]}
    huge = user.post(f"/v1/sessions/{session}/exec", json=sparse)
    refused(huge, 422, "max_file_bytes")
    path = {"path": "/tmp/huge"}
    with user.stream("GET", f"/v1/sessions/{session}/files", params=path) as download:
        if download.status_code == 200:  # refused once past the cap, mid-stream
            with pytest.raises(httpx.RemoteProtocolError):
                assert sum(len(chunk) for chunk in download.iter_bytes()) <= 256 * 1024**2
        else:
            assert download.status_code == 422


# --- the server's own services through a run's repository --------------------------------


def _refused_run(served: Served, repo: str, rule: str, **extra: str) -> str:
    with served.client(served.key("mallory")) as client:
        answer = client.post("/v1/runs", json={"repo": repo, "task": "look around", **extra})
        detail = refused(answer, 403, f"{USER}.{rule}")
        assert client.get("/v1/runs").json() == []
    return detail


def _loopback_urls(victims: tuple[Victim, Victim]) -> list[tuple[str, str]]:
    port, port6 = victims[0].port, victims[1].port
    return [
        (f"http://127.0.0.1:{port}/x.git", "repos.allow_cidrs"),
        (f"https://localhost:{port}/x.git", "repos.allow_cidrs"),
        (f"ssh://127.0.0.1:{port}/x", "repos.allow_cidrs"),
        (f"ssh://git@localhost:{port}/x", "repos.allow_cidrs"),
        (f"http://[::1]:{port6}/", "repos.allow_cidrs"),
        (f"http://[::ffff:127.0.0.1]:{port}/x.git", "repos.allow_cidrs"),
        (f"https://repo.attack.test:{port}/x.git", "repos.allow_cidrs"),
        (f"git://127.0.0.1:{port}/x", "repos.schemes"),
        (f"ext::nc 127.0.0.1 {port}", "server_files"),  # not a URL: a command
        (f"http://2130706433:{port}/", "repos.allow"),
        (f"http://0x7f000001:{port}/", "repos.allow"),
        (f"http://127.1:{port}/", "repos.allow"),
    ]


@needs_box
def test_a_repository_on_loopback_is_refused_by_address_before_any_connection(
    widened: Served, victims: tuple[Victim, Victim]
) -> None:
    for url, rule in _loopback_urls(victims):
        _refused_run(widened, url, rule)
    assert victims[0].seen == []
    assert victims[1].seen == []


@needs_box
def test_by_default_a_user_key_reaches_git_over_https_only(
    plain: Served, victims: tuple[Victim, Victim]
) -> None:
    port = victims[0].port
    _refused_run(plain, f"http://127.0.0.1:{port}/x.git", "repos.schemes")
    _refused_run(plain, f"ssh://127.0.0.1:{port}/x", "repos.schemes")
    _refused_run(plain, "git@127.0.0.1:x.git", "repos.schemes")
    _refused_run(plain, f"https://localhost:{port}/x.git", "repos.ports")
    _refused_run(plain, "https://localhost/x.git", "repos.allow_cidrs")
    _refused_run(plain, "https://repo.attack.test/x.git", "repos.allow_cidrs")
    assert victims[0].seen == []


@needs_box
def test_a_refusal_does_not_say_what_a_name_resolves_to(plain: Served) -> None:
    private = _refused_run(plain, "https://repo.attack.test/x.git", "repos.allow_cidrs")
    missing = _refused_run(plain, "https://nowhere.invalid/x.git", "repos.allow_cidrs")
    assert "127.0.0.1" not in private
    assert private.replace("repo.attack.test", "nowhere.invalid") == missing


@needs_box
def test_an_issue_for_the_local_forge_names_a_server_file(plain: Served) -> None:
    issue = "https://github.com/o/r/issues/1"
    _refused_run(plain, "https://github.com/o/r.git", "server_files", issue=issue, forge="local")


async def test_an_issue_url_never_makes_the_forge_reach_its_host(
    victims: tuple[Victim, Victim],
) -> None:
    victim = f"http://127.0.0.1:{victims[0].port}/o/r/issues/1"
    on_github = GitHubForge(GitHubConfig(), token=None)
    with pytest.raises(ForgeError, match=r"not on github\.com"):
        await on_github.fetch_issue(victim)
    with GitHubServer() as api:
        api.add_issue("o/r", 1, "An issue")
        enterprise = GitHubForge(GitHubConfig(api_url=api.api_url), token=None)
        issue = await enterprise.fetch_issue(victim)  # read from the configured API only
        assert issue.title == "An issue"
        assert api.requests[0].path == "/repos/o/r/issues/1"
    assert victims[0].seen == []


# --- bodies and uploads ------------------------------------------------------------------


def _raw(served: Served, head: str) -> tuple[int, dict[str, Any]]:
    """Send only a request's head (its body declared, never sent); the status and body."""
    host, port = httpx.URL(served.url).host, httpx.URL(served.url).port
    with socket.create_connection((host, port or 80), timeout=60) as conn:
        conn.sendall(head.encode())
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2])


def _chunks(size: int) -> Iterator[bytes]:
    for start in range(0, size, 65536):
        yield b" " * min(65536, size - start)


@needs_box
def test_a_body_declared_too_large_is_refused_unread(widened: Served) -> None:
    key = widened.key("mallory")
    for who in (f"Authorization: Bearer {key}\r\n", ""):
        head = (
            f"POST /v1/sessions HTTP/1.1\r\nHost: golem\r\n{who}"
            "Content-Type: application/json\r\nContent-Length: 10737418240\r\n\r\n"
        )
        status, body = _raw(widened, head)
        assert status == 413
        assert f"{USER}.max_body_bytes" in body["detail"]
    with widened.client(key) as client:
        assert client.get("/v1/sessions").json() == []


@needs_box
def test_a_chunked_body_that_runs_over_is_refused_and_the_call_never_runs(
    widened: Served,
) -> None:
    with widened.client(widened.key("mallory")) as client:
        session = client.post("/v1/sessions", json={}).json()["id"]
        padded = iter([b'{"cmd": "touch ran"', *_chunks(1024**2), b"}"])
        answer = client.post(
            f"/v1/sessions/{session}/exec",
            content=padded,
            headers={"Content-Type": "application/json"},
        )
        refused(answer, 413, f"{USER}.max_body_bytes")
        probe = client.post(f"/v1/sessions/{session}/exec", json={"cmd": "test -e ran"})
        assert probe.json()["exit_code"] != 0


@needs_box
def test_an_upload_past_the_user_limit_is_refused(widened: Served) -> None:
    key = widened.key("mallory")
    with widened.client(key) as client:
        session = client.post("/v1/sessions", json={}).json()["id"]
        for kind in ("files", "archive"):
            head = (
                f"PUT /v1/sessions/{session}/{kind}?path=big HTTP/1.1\r\nHost: golem\r\n"
                f"Authorization: Bearer {key}\r\nContent-Length: 10737418240\r\n\r\n"
            )
            status, body = _raw(widened, head)
            assert status == 413
            assert f"{USER}.max_upload_bytes" in body["detail"]
        streamed = client.put(
            f"/v1/sessions/{session}/files",
            params={"path": "big"},
            content=_chunks(2 * 1024**2 + 1),
        )
        refused(streamed, 413, f"{USER}.max_upload_bytes")
        small = client.put(f"/v1/sessions/{session}/files", params={"path": "ok"}, content=b"1")
        assert small.status_code == 204


@needs_box
def test_a_trusted_key_sends_what_a_user_key_may_not(widened: Served) -> None:
    with widened.client(widened.key("acme", "trusted")) as client:
        files = {"blob": base64.b64encode(b"x" * 1024**2 * 2).decode()}
        done = client.post("/v1/exec", json={"request": {"cmd": "wc -c < blob", "files": files}})
        assert unb64(done.json()["stdout"]).strip() == str(2 * 1024**2).encode()


# --- WebSocket messages ------------------------------------------------------------------


def _socket(served: Served, key: str, session: str) -> ClientConnection:
    url = served.url.replace("http://", "ws://") + f"/v1/sessions/{session}/exec/ws"
    return connect(url, additional_headers={"Authorization": f"Bearer {key}"})


def _closed_with(ws: ClientConnection, code: int, words: str) -> str:
    """The server's error frame naming the problem, then its close with ``code``; the
    close's reason."""
    frame = json.loads(ws.recv(60))
    assert (frame["type"], frame["kind"]) == ("error", "BadMessage"), frame
    assert words in frame["message"], frame
    with pytest.raises(ConnectionClosed) as closed:
        ws.recv(60)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == code
    assert closed.value.rcvd.reason
    return closed.value.rcvd.reason


BAD_FIRST = [
    ("nope", "Invalid JSON"),
    (json.dumps({"request": {"cmd": "true"}, "sudo": True}), "sudo"),
    (json.dumps({"request": {"cmd": "true"}, "rows": "24"}), "rows"),
]
BAD_LATER = [
    ("{", "Invalid JSON"),
    (json.dumps({"stdin": "@@not base64@@"}), "not base64"),
    (json.dumps({"signal": "9"}), "signal"),
    (json.dumps({"signal": 9.5}), "signal"),
    (json.dumps({"signal": 99}), "signal"),
    (json.dumps({"sudo": True}), "sudo"),
    (json.dumps({"resize": {"rows": "x", "cols": 80}}), "resize.rows"),
    (b"\x00\xff binary", "Invalid JSON"),
]


@needs_box
@pytest.mark.parametrize(("message", "words"), BAD_FIRST)
def test_a_bad_first_websocket_message_closes_4400(
    plain: Served, user: httpx.Client, session: str, message: str, words: str
) -> None:
    key = user.headers["authorization"].removeprefix("Bearer ")
    with _socket(plain, key, session) as ws:
        ws.send(message)
        _closed_with(ws, 4400, words)


@needs_box
@pytest.mark.parametrize("pty", [False, True])
@pytest.mark.parametrize(("message", "words"), BAD_LATER)
def test_a_bad_websocket_message_kills_the_call_and_closes_4400(
    plain: Served, user: httpx.Client, session: str, message: str | bytes, words: str, pty: bool
) -> None:
    key = user.headers["authorization"].removeprefix("Bearer ")
    with _socket(plain, key, session) as ws:
        start = {"cmd": "echo $$ > call.pid; echo up; exec sleep 600"}
        ws.send(json.dumps({"request": start, "pty": pty}))
        while b"up" not in unb64(json.loads(ws.recv(60)).get("data", "")):
            pass
        ws.send(message)
        _closed_with(ws, 4400, words)
    _assert_call_ended(user, session)


def _assert_call_ended(user: httpx.Client, session: str) -> None:
    """The call's process is gone (waited for in the box, at most a minute)."""
    gone = "while kill -0 $(cat call.pid) 2>/dev/null; do sleep 0.05; done; echo gone"
    answer = user.post(f"/v1/sessions/{session}/exec", json={"cmd": gone, "timeout": 60})
    assert unb64(answer.json()["stdout"]) == b"gone\n", answer.text


@needs_box
def test_a_websocket_message_past_the_user_limit_closes_4413(widened: Served) -> None:
    key = widened.key("mallory")
    with widened.client(key) as client:
        session = client.post("/v1/sessions", json={}).json()["id"]
        with _socket(widened, key, session) as ws:
            ws.send(json.dumps({"request": {"cmd": "echo $$ > call.pid; echo up; exec cat"}}))
            assert unb64(json.loads(ws.recv(60))["data"]) == b"up\n"
            ws.send(json.dumps({"stdin": base64.b64encode(b"x" * 1024**2).decode()}))
            reason = _closed_with(ws, 4413, f"{USER}.max_body_bytes")
            assert f"{USER}.max_body_bytes" in reason
        _assert_call_ended(client, session)


# --- the call channel: what HTTP refuses, the socket refuses -----------------------------


def _channel(served: Served, key: str, session: str) -> ClientConnection:
    url = served.url.replace("http://", "ws://") + f"/v1/sessions/{session}/calls"
    return connect(url, additional_headers={"Authorization": f"Bearer {key}"})


def _answer(ws: ClientConnection, op: str, call: dict[str, Any]) -> dict[str, Any]:
    """The channel's last frame for one call: its result, its end, or its error."""
    ws.send(json.dumps({"id": 7, "op": op, "request": call}))
    while True:
        frame: dict[str, Any] = json.loads(ws.recv(60))
        assert frame["id"] == 7, frame
        if "event" not in frame:
            return frame


@needs_box
@pytest.mark.parametrize(("fields", "option"), CALLS)
@pytest.mark.parametrize("op", ["execute", "stream"])
def test_a_call_past_the_user_policy_is_refused_over_the_call_channel_too(
    plain: Served, user: httpx.Client, session: str, fields: dict[str, Any], option: str, op: str
) -> None:
    key = user.headers["authorization"].removeprefix("Bearer ")
    with _channel(plain, key, session) as ws:
        error = _answer(ws, op, {"cmd": "touch ran", **fields})["error"]
        assert (error["status"], error["kind"]) == (403, "PolicyViolation"), error
        assert f"{USER}.{option}" in error["detail"]
        assert _answer(ws, "execute", {"cmd": "true"})["result"]["exit_code"] == 0  # still open
    assert not _ran(user, session)


@needs_box
def test_another_tenants_session_is_not_found_over_the_call_channel(
    plain: Served, session: str
) -> None:
    with pytest.raises(InvalidStatus) as refused_handshake:
        _channel(plain, plain.key("eve"), session)
    assert refused_handshake.value.response.status_code == 404


@needs_box
def test_a_key_revoked_while_its_channel_is_open_can_call_no_more(plain: Served) -> None:
    with plain.admin() as admin:
        made = admin.post("/v1/keys", json={"tenant": "revoked", "role": "user"}).json()
    with plain.client(made["key"]) as client, plain.client(plain.key("revoked")) as kept:
        session = client.post("/v1/sessions", json={}).json()["id"]
        with _channel(plain, made["key"], session) as ws:
            assert _answer(ws, "execute", {"cmd": "true"})["result"]["exit_code"] == 0
            with plain.admin() as admin:
                assert admin.delete(f"/v1/keys/{made['id']}").status_code == 204
            error = _answer(ws, "execute", {"cmd": "touch ran"})["error"]
            assert error["status"] == 401, error
        assert not _ran(kept, session)  # seen with another key of the tenant
        kept.delete(f"/v1/sessions/{session}")


BAD_CHANNEL = [
    ("nope", "Invalid JSON"),
    (json.dumps({"id": 1, "op": "execute", "request": {"cmd": "true"}, "sudo": 1}), "sudo"),
    (json.dumps({"id": "1", "op": "execute", "request": {"cmd": "true"}}), "id"),
    (json.dumps({"id": 1, "op": "shell", "request": {"cmd": "true"}}), "op"),
]  # a call without a request is refused alone: tests/service/test_bad_messages.py


@needs_box
@pytest.mark.parametrize(("message", "words"), BAD_CHANNEL)
def test_a_bad_call_channel_message_closes_4400(
    plain: Served, user: httpx.Client, session: str, message: str, words: str
) -> None:
    key = user.headers["authorization"].removeprefix("Bearer ")
    with _channel(plain, key, session) as ws:
        ws.send(message)
        _closed_with(ws, 4400, words)
