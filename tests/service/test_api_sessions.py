"""The engine over HTTP against a real server on loopback: calls, streams (SSE and a
WebSocket with stdin, signals and a pty), files, background processes; the key's policy
refusing unsafe options with errors that name it; session capacity."""

from __future__ import annotations

import base64
import json
import signal
import threading
from collections.abc import Iterator

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.service.served import Served, serving, unb64

pytestmark = pytest.mark.bwrap


@pytest.fixture
def acme(served: Served) -> Iterator[httpx.Client]:
    with served.client(served.tenant_key("acme")) as client:
        yield client


@pytest.fixture
def session(acme: httpx.Client) -> Iterator[str]:
    made = acme.post("/v1/sessions", json={})
    assert made.status_code == 201, made.text
    yield made.json()["id"]
    acme.delete(f"/v1/sessions/{made.json()['id']}")


def sse_events(response: httpx.Response) -> list[dict[str, object]]:
    """The data of every server-sent event of a finished stream."""
    return [
        json.loads(line.removeprefix("data:").strip())
        for line in response.text.splitlines()
        if line.startswith("data:")
    ]


def test_a_call_runs_in_the_session_and_state_persists(acme: httpx.Client, session: str) -> None:
    path = f"/v1/sessions/{session}/exec"
    first = acme.post(path, json={"cmd": "echo hi > /workspace/note; echo out; exit 3"}).json()
    assert (unb64(first["stdout"]), first["exit_code"]) == (b"out\n", 3)
    again = acme.post(path, json={"cmd": ["cat", "/workspace/note"]}).json()
    assert unb64(again["stdout"]) == b"hi\n"
    code = acme.post(path, json={"code": "print(6 * 7)", "runtime": "python"}).json()
    assert unb64(code["stdout"]) == b"42\n"


def test_a_streamed_call_sends_its_output_then_its_exit(acme: httpx.Client, session: str) -> None:
    answer = acme.post(
        f"/v1/sessions/{session}/exec/stream", json={"cmd": "echo one; echo two >&2; exit 4"}
    )
    assert answer.headers["content-type"].startswith("text/event-stream")
    events = sse_events(answer)
    assert [(e["type"], unb64(e.get("data"))) for e in events[:-1]] in (
        [("stdout", b"one\n"), ("stderr", b"two\n")],
        [("stderr", b"two\n"), ("stdout", b"one\n")],
    )
    assert events[-1]["type"] == "exit"
    assert events[-1]["exit_code"] == 4


def test_files_round_trip_binary_and_a_missing_one_is_a_clear_error(
    acme: httpx.Client, session: str
) -> None:
    payload = bytes(range(256)) * 1000
    path = f"/v1/sessions/{session}/files"
    put = acme.put(path, params={"path": "data/blob.bin"}, content=payload)
    assert put.status_code == 204, put.text
    assert acme.get(path, params={"path": "data/blob.bin"}).content == payload
    listed = acme.post(f"/v1/sessions/{session}/exec", json={"cmd": "wc -c < data/blob.bin"})
    assert unb64(listed.json()["stdout"]).strip() == str(len(payload)).encode()
    missing = acme.get(path, params={"path": "nope.txt"})
    assert missing.status_code in (400, 404)
    assert "nope.txt" in missing.json()["detail"]


def test_a_background_process_is_read_signalled_and_waited_for(
    acme: httpx.Client, session: str
) -> None:
    base = f"/v1/sessions/{session}/processes"
    started = acme.post(base, json={"cmd": "echo ready; exec sleep 600"})
    assert started.status_code == 201, started.text
    process = started.json()["id"]
    assert [p["id"] for p in acme.get(base).json()] == [process]
    output = acme.get(f"{base}/{process}/output").json()
    while b"ready" not in unb64(output["data"]):
        output = acme.get(f"{base}/{process}/output").json()
    killed = acme.post(f"{base}/{process}/signal", json={"signal": int(signal.SIGKILL)})
    assert killed.status_code == 204
    waited = acme.post(f"{base}/{process}/wait", json={"timeout": 60}).json()
    assert waited["exit_code"] is not None
    assert acme.delete(f"{base}/{process}").status_code == 204


def _ws(served: Served, key: str, session: str) -> str:
    return served.url.replace("http://", "ws://") + f"/v1/sessions/{session}/exec/ws"


def test_a_websocket_call_takes_stdin_as_it_comes_and_a_signal(
    served: Served, acme: httpx.Client, session: str
) -> None:
    key = acme.headers["authorization"].removeprefix("Bearer ")
    headers = {"Authorization": f"Bearer {key}"}
    with connect(_ws(served, key, session), additional_headers=headers) as ws:
        ws.send(json.dumps({"request": {"cmd": "while read line; do echo got:$line; done"}}))
        ws.send(json.dumps({"stdin": base64.b64encode(b"first\n").decode()}))
        first = json.loads(ws.recv(60))
        assert (first["type"], unb64(first["data"])) == ("stdout", b"got:first\n")
        ws.send(json.dumps({"stdin": base64.b64encode(b"second\n").decode()}))
        assert unb64(json.loads(ws.recv(60))["data"]) == b"got:second\n"
        ws.send(json.dumps({"stdin_close": True}))
        assert json.loads(ws.recv(60))["type"] == "exit"
    with connect(_ws(served, key, session), additional_headers=headers) as ws:
        ws.send(json.dumps({"request": {"cmd": "echo up; exec sleep 600"}}))
        assert unb64(json.loads(ws.recv(60))["data"]) == b"up\n"
        ws.send(json.dumps({"signal": int(signal.SIGTERM)}))
        ended = json.loads(ws.recv(60))
        assert ended["type"] == "exit"
        assert ended["signal"] == signal.SIGTERM or ended["exit_code"] == 128 + signal.SIGTERM


def test_a_websocket_pty_echoes_what_is_typed(
    served: Served, acme: httpx.Client, session: str
) -> None:
    key = acme.headers["authorization"].removeprefix("Bearer ")
    headers = {"Authorization": f"Bearer {key}"}
    with connect(_ws(served, key, session), additional_headers=headers) as ws:
        ws.send(json.dumps({"request": {"cmd": ["sh"]}, "pty": True, "rows": 30, "cols": 100}))
        ws.send(json.dumps({"stdin": base64.b64encode(b"stty size; exit 7\n").decode()}))
        seen, message = b"", {}
        while message.get("type") != "exit":
            message = json.loads(ws.recv(60))
            seen += unb64(message.get("data", ""))
        assert b"30 100" in seen
        assert message["exit_code"] == 7


def test_a_websocket_without_a_key_or_for_another_tenant_is_refused(
    served: Served, session: str
) -> None:
    with pytest.raises(InvalidStatus) as anonymous:
        connect(_ws(served, "", session))
    assert anonymous.value.response.status_code == 401
    assert b"API key" in anonymous.value.response.body
    other = {"Authorization": f"Bearer {served.tenant_key('other')}"}
    with pytest.raises(InvalidStatus) as foreign:
        connect(_ws(served, "", session), additional_headers=other)
    assert foreign.value.response.status_code == 404


@pytest.mark.parametrize(
    ("spec", "policy"),
    [
        ({"network": "host"}, "server.policies.user.networks"),
        ({"memory": "64g"}, "server.policies.user.max_memory"),
        ({"cpus": 64}, "server.policies.user.max_cpus"),
        ({"image": "evil/image:latest"}, "server.policies.user.images"),
        ({"workspace": "/"}, "server.policies.user.host_workspace"),
        ({"read_only_root": False}, "server.policies.user.writable_root"),
        ({"user": "root"}, "server.policies.user.root_user"),
    ],
)
def test_an_unsafe_box_is_refused_naming_the_policy(
    acme: httpx.Client, spec: dict[str, object], policy: str
) -> None:
    refused = acme.post("/v1/sessions", json={"spec": spec})
    assert refused.status_code == 403, refused.text
    assert refused.json()["kind"] == "PolicyViolation"
    assert policy in refused.json()["detail"]
    assert acme.get("/v1/sessions").json() == []  # nothing was started


def test_options_the_api_does_not_offer_cannot_be_asked_for(acme: httpx.Client) -> None:
    for spec in ({"seccomp": "unconfined"}, {"cap_add": ["SYS_ADMIN"]}, {"privileged": True}):
        refused = acme.post("/v1/sessions", json={"spec": spec})
        assert refused.status_code in (400, 422), refused.text
        assert next(iter(spec)) in refused.json()["detail"]
    one_shot = acme.post("/v1/exec", json={"request": {"cmd": "id"}, "spec": {"network": "host"}})
    assert one_shot.status_code == 403
    assert acme.get("/v1/sessions").json() == []


def test_a_call_over_the_timeout_cap_is_refused(acme: httpx.Client, session: str) -> None:
    refused = acme.post(f"/v1/sessions/{session}/exec", json={"cmd": "true", "timeout": 86400})
    assert refused.status_code == 403
    assert "server.policies.user.max_timeout" in refused.json()["detail"]


def test_a_trusted_key_may_ask_for_what_a_user_key_may_not(served: Served) -> None:
    with served.client(served.tenant_key("acme", "trusted")) as trusted:
        made = trusted.post("/v1/sessions", json={"spec": {"memory": "8g", "cpus": 8}})
        assert made.status_code == 201, made.text
        assert made.json()["spec"]["memory"] == "8g"
        assert trusted.delete(f"/v1/sessions/{made.json()['id']}").status_code == 204


def test_a_one_shot_call_leaves_no_session(acme: httpx.Client) -> None:
    done = acme.post("/v1/exec", json={"request": {"cmd": "echo once"}})
    assert unb64(done.json()["stdout"]) == b"once\n"
    assert acme.get("/v1/sessions").json() == []


CAPACITY = """
[server]
max_sessions = 1
overflow = "{overflow}"
retry_after = 7
[server.policies.user]
max_sessions = {per_tenant}
"""


def test_a_full_server_answers_429_with_retry_after(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    state = tmp_path_factory.mktemp("full") / "state"
    with (
        serving(state, config=CAPACITY.format(overflow="reject", per_tenant=5)) as server,
        server.client(server.key("acme")) as acme,
        server.client(server.key("b")) as other,
    ):
        first = acme.post("/v1/sessions", json={})
        assert first.status_code == 201
        full = other.post("/v1/sessions", json={})
        assert full.status_code == 429
        assert full.headers["retry-after"] == "7"
        assert "server.max_sessions" in full.json()["detail"]
        acme.delete(f"/v1/sessions/{first.json()['id']}")
        assert other.post("/v1/sessions", json={}).status_code == 201


def test_a_tenant_over_its_share_gets_429_naming_its_policy(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    state = tmp_path_factory.mktemp("share") / "state"
    with (
        serving(state, config=CAPACITY.format(overflow="reject", per_tenant=0)) as server,
        server.client(server.key("acme")) as acme,
    ):
        over = acme.post("/v1/sessions", json={})
        assert over.status_code == 429
        assert "server.policies.user.max_sessions" in over.json()["detail"]


def test_with_overflow_queue_a_session_request_waits_for_a_free_slot(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    state = tmp_path_factory.mktemp("queue") / "state"
    with (
        serving(state, config=CAPACITY.format(overflow="queue", per_tenant=5)) as server,
        server.client(server.key("acme")) as acme,
        server.client(server.key("b")) as other,
    ):
        first = acme.post("/v1/sessions", json={}).json()["id"]
        answers: list[httpx.Response] = []
        waiter = threading.Thread(
            target=lambda: answers.append(other.post("/v1/sessions", json={}))
        )
        waiter.start()
        assert acme.delete(f"/v1/sessions/{first}").status_code == 204
        waiter.join(120)
        assert [a.status_code for a in answers] == [201]
        assert len(other.get("/v1/sessions").json()) == 1


def test_requests_arriving_together_never_exceed_the_servers_sessions(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    state = tmp_path_factory.mktemp("burst") / "state"
    config = CAPACITY.format(overflow="reject", per_tenant=10).replace(
        "max_sessions = 1\n", "max_sessions = 3\n", 1
    )
    with serving(state, config=config) as server:
        keys = [server.key(f"t{n}") for n in range(10)]
        barrier = threading.Barrier(len(keys))
        answers: list[int] = []

        def create(key: str) -> None:
            with server.client(key) as client:
                barrier.wait(60)
                answers.append(client.post("/v1/sessions", json={}).status_code)

        threads = [threading.Thread(target=create, args=(key,)) for key in keys]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert sorted(answers) == [201] * 3 + [429] * 7
