"""A real `golem serve` talking to the loopback Slack: its configuration, events and the posts
it makes (fixtures)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
import yaml

import golem.blueprint
from golem.testing.slack_server import BOT_USER, SlackCall, SlackServer
from tests.blueprint.repos import EXAMPLES, make_remote
from tests.service.polling import eventually
from tests.service.served import Served, serving

SIGNING_SECRET = "slack-signing-secret-0123456789abcdef"  # noqa: S105 - a test secret

BOT_TOKEN = "xoxb-slack-test-token-0123456789"  # noqa: S105 - a test token

TEAM = "T0TEAM"

CHANNEL = "C0CALC"  # the calculator's channel

ALICE, BOB, CAROL, MALLORY = "U0ALICE", "U0BOB", "U0CAROL", "U0MALLORY"

GUEST, SOLO, GONE, ROBOT = "U0GUEST", "U0SOLO", "U0GONE", "U0ROBOT"

PARTNER, DAVE, ERIN, FRANK = "U0PARTNER", "U0DAVE", "U0ERIN", "U0FRANK"

PEOPLE = {  # what users.info says of each (all mapped to acme: only their record refuses them)
    ALICE: {}, BOB: {}, CAROL: {}, DAVE: {}, ERIN: {}, FRANK: {},
    GUEST: {"is_restricted": True},  # a multi-channel guest
    SOLO: {"is_restricted": True, "is_ultra_restricted": True},  # a single-channel guest
    GONE: {"deleted": True}, ROBOT: {"is_bot": True},
    PARTNER: {"team": "T0PARTNER"},  # Slack Connect: a user of another workspace
}  # fmt: skip

CALC_GROUP = "S0CALC"  # the user group [server.slack.people] allow names

SERVER_ENV = {"SLACK_TEST_SIGNING_SECRET": SIGNING_SECRET, "SLACK_TEST_BOT_TOKEN": BOT_TOKEN}


def gated_first(directory: Path, name: str = "minion") -> Path:
    """Built-in blueprint ``name``, starting at a gate (approved: on to its first node)."""
    source = Path(golem.blueprint.__file__).parent / "builtin" / f"{name}.yaml"
    blueprint = yaml.safe_load(source.read_text())
    first = blueprint.get("start") or blueprint["nodes"][0]["id"]
    gate = {"id": "approve", "kind": "gate", "message": "Go on?", "timeout": 3600}
    blueprint["nodes"].append({**gate, "next": {"approved": first, "rejected": "end"}})
    blueprint.update(name=f"gated-{name}", start="approve")
    path = directory / f"gated-{name}.yaml"
    path.write_text(yaml.safe_dump(blueprint))
    return path


def slack_config(
    slack: SlackServer,
    blueprint: Path,
    repos: dict[str, Path],
    extra: str = "",
    model: Path = EXAMPLES / "calculator-fix.yaml",
) -> str:
    """golem.toml of a server whose Slack is the loopback one."""
    listed = "\n".join(f'{name} = "{path}"' for name, path in repos.items())
    others = sorted(set(PEOPLE) - {ALICE, BOB, CAROL})
    mapped = "\n".join(f'{user} = {{ tenant = "acme", role = "trusted" }}' for user in others)
    return f"""
[server]
max_runs = 16  # the runs wait at their gate: each holds a runner

[forge]
provider = "local"

[server.slack]
team = "{TEAM}"
api_url = "{slack.api_url}"
signing_secret_env = "SLACK_TEST_SIGNING_SECRET"
token_env = "SLACK_TEST_BOT_TOKEN"
blueprint = "{blueprint}"
model = "scripted:{model}"
update_interval = 0

[server.slack.users]
{ALICE} = {{ tenant = "acme", role = "trusted" }}
{BOB} = {{ tenant = "acme", role = "user" }}
{CAROL} = {{ tenant = "other", role = "trusted" }}
{mapped}

[server.slack.repos]
{listed}

[server.slack.channels]
{CHANNEL} = "calculator"
{extra}"""


def add_people(slack: SlackServer) -> None:
    """The workspace's people as users.info tells them, and the user group S0CALC."""
    for user, flags in PEOPLE.items():
        slack.add_user(user, **flags)
    slack.add_group(CALC_GROUP, sorted(set(PEOPLE) - {CAROL, DAVE}))


@pytest.fixture(scope="module")
def slack() -> Iterator[SlackServer]:
    with SlackServer(token=BOT_TOKEN) as server:
        add_people(server)
        yield server


@pytest.fixture(scope="module")
def remotes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("slack-remotes")
    return {name: make_remote(directory, name) for name in ("calculator", "widgets")}


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, slack: SlackServer, remotes: dict[str, Path]
) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("slack")
    extra = (
        '[server.trust]\noutsiders = "gvisor"\n[engine.tiers.gvisor]\ntype = "process"\n'
        f'[server.slack.people]\nallow = ["{CALC_GROUP}", "{CAROL}"]\n'
    )
    config = slack_config(slack, gated_first(home), remotes, extra)
    with serving(home / "state", config=config, env=SERVER_ENV) as server:
        yield server


@pytest.fixture(scope="module")
def acme(served: Served) -> str:
    return served.key("acme")


def signed(body: bytes, *, secret: str = SIGNING_SECRET, at: int | None = None) -> dict[str, str]:
    """The headers Slack signs a request with."""
    stamp = str(int(time.time()) if at is None else at)
    base = b"v0:" + stamp.encode() + b":" + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


def post(
    served: Served, path: str, body: bytes, content_type: str, **headers: str
) -> httpx.Response:
    sent = {"Content-Type": content_type, **signed(body), **headers}
    with served.client() as client:
        return client.post(f"/v1/slack/{path}", content=body, headers=sent)


def event_callback(event: dict[str, Any], event_id: str | None = None) -> dict[str, Any]:
    """An Events API callback, as Slack documents it."""
    return {
        "token": "verification-token-unused", "team_id": TEAM, "api_app_id": "A0GOLEM",
        "event": event, "type": "event_callback",
        "event_id": event_id or "Ev" + uuid.uuid4().hex[:10].upper(),
        "event_time": int(time.time()),
        "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
    }  # fmt: skip


def app_mention(
    channel: str, user: str, text: str, ts: str, thread_ts: str | None = None
) -> dict[str, Any]:
    """An ``app_mention`` event: ``user`` wrote ``text`` mentioning golem's app."""
    event = {"type": "app_mention", "user": user, "text": text, "ts": ts, "channel": channel,
             "event_ts": ts}  # fmt: skip
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return event


def deliver(served: Served, payload: dict[str, Any], **headers: str) -> httpx.Response:
    return post(served, "events", json.dumps(payload).encode(), "application/json", **headers)


def mention(
    served: Served,
    slack: SlackServer,
    text: str,
    *,
    user: str = ALICE,
    channel: str = CHANNEL,
    thread_ts: str | None = None,
) -> tuple[httpx.Response, str, dict[str, Any]]:
    """``user`` writes ``text`` (mentioning golem) and Slack delivers its app_mention: the
    answer, the message's ts and the payload (to deliver again)."""
    full = f"<@{BOT_USER}> {text}"
    ts = slack.add_message(channel, full, user=user, thread_ts=thread_ts)
    payload = event_callback(app_mention(channel, user, full, ts, thread_ts))
    return deliver(served, payload), ts, payload


def click(
    served: Served,
    action: str,
    run_id: str,
    message_ts: str,
    *,
    user: str = ALICE,
    channel: str = CHANNEL,
) -> httpx.Response:
    """A ``block_actions`` interaction: ``user`` clicked a button of a status message."""
    payload = {
        "type": "block_actions", "user": {"id": user, "username": user.lower(), "team_id": TEAM},
        "api_app_id": "A0GOLEM", "token": "unused", "trigger_id": f"{uuid.uuid4().int}.1.x",
        "team": {"id": TEAM, "domain": "acme"}, "channel": {"id": channel, "name": "calc"},
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel,
                      "is_ephemeral": False},
        "message": {"type": "message", "ts": message_ts, "text": "status"},
        "response_url": "https://hooks.slack.invalid/actions/x",
        "actions": [{"action_id": action, "block_id": "golem.run", "value": run_id,
                     "type": "button", "action_ts": "1700000001.1"}],
    }  # fmt: skip
    body = urlencode({"payload": json.dumps(payload)}).encode()
    return post(served, "interactivity", body, "application/x-www-form-urlencoded")


def status_posts(slack: SlackServer, run_id: str) -> list[SlackCall]:
    """The status messages golem posted for ``run_id`` (one, edited in place, is right)."""
    return [
        c for c in slack.calls("chat.postMessage")
        if c.args.get("blocks") and c.args["text"].startswith(f"golem run {run_id}:")
    ]  # fmt: skip


def buttons(message: dict[str, Any]) -> list[str]:
    """The action ids of a message's buttons."""
    return [
        element["action_id"]
        for block in message.get("blocks") or []
        if block.get("type") == "actions"
        for element in block["elements"]
    ]


def status_showing(
    slack: SlackServer,
    run_id: str,
    condition: Callable[[dict[str, Any]], bool],
    channel: str = CHANNEL,
) -> tuple[str, dict[str, Any]]:
    """The run's one status message (its ts and content now), once ``condition`` holds."""

    def probe() -> tuple[str, dict[str, Any]] | None:
        posts = status_posts(slack, run_id)
        if not posts:
            return None
        assert len(posts) == 1, f"more than one status message: {posts}"
        thread_ts = str(posts[0].args["thread_ts"])
        mine = [m for m in slack.thread(channel, thread_ts) if m.get("blocks")]
        ts = next(m["ts"] for m in mine if m["text"].startswith(f"golem run {run_id}:"))
        message = slack.message(channel, ts)
        return (ts, message) if condition(message) else None

    return eventually(probe, f"the status message of {run_id}")


def replies_saying(slack: SlackServer, thread_ts: str, words: str) -> list[SlackCall]:
    """golem's messages in a thread that say ``words``."""
    return [
        c for c in slack.calls("chat.postMessage")
        if c.args.get("thread_ts") == thread_ts and words in c.args["text"]
    ]  # fmt: skip


def run_of(served: Served, key: str, run_id: str) -> dict[str, Any]:
    with served.client(key) as client:
        answer = client.get(f"/v1/runs/{run_id}")
    answer.raise_for_status()
    found: dict[str, Any] = answer.json()
    return found
