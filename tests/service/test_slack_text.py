"""What golem reads from Slack and writes there, as text: a message's markup read as plain
text (mentions, channels and links spelled out); a thread bounded to the run's share, its
outsiders named; and whatever a run or a person wrote shown escaped, so that no text of
theirs becomes a mention, an @channel, a link or a button of golem's message."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.core.isolation import TrustPolicy
from golem.core.slack_config import SlackConfig
from golem.service.slack import messages, mrkdwn
from golem.service.slack.thread import read_ask, render_thread
from golem.service.sources import Check, RunProgress

BOT = "U0GOLEMBOT"
HOSTILE = st.text(alphabet=st.sampled_from("<>&|@!#`*_~:/. \nabcHTtps^"), max_size=200)
OWN_LINK = re.compile(r"<https?://[^|>]+\|[^>]*>")


def progress(text: str, *, status: str = "failed", url: str | None = None) -> RunProgress:
    return RunProgress(
        run_id="run-0123456789ab", status=status, title=text, step=None,
        checks=(Check(text or "test", passed=False),), cost_usd=0.5, gate=text or None,
        paused=None, pr_url=url, pr_number=3 if url else None, follow_up=False,
        summary=text, reason=text or None,
    )  # fmt: skip


def test_a_messages_markup_is_read_as_plain_text() -> None:
    said = "<@U0BOB> see <https://ci.example.com/7|the run> in <#C0DEV|dev>, <!here> &lt;3 &amp;"
    assert mrkdwn.read(said) == "@U0BOB see the run (https://ci.example.com/7) in #dev, @here <3 &"
    assert mrkdwn.links(said) == ["https://ci.example.com/7"]


def test_an_ask_loses_golems_mention_and_names_its_repository() -> None:
    ask = read_ask(f"<@{BOT}> repo: widgets please fix <@U0BOB>'s bug", BOT)
    assert (ask.text, ask.repo) == ("please fix @U0BOB's bug", "widgets")
    assert read_ask(f"<@{BOT}>", BOT).text == ""
    assert read_ask("fix the repo:", None).repo is None


def test_a_long_thread_keeps_its_newest_messages_and_names_its_outsiders() -> None:
    thread = [
        {"user": "U0ALICE", "text": "first " + "x" * 500, "ts": "1.1"},
        {"user": "U0GUEST", "text": "second", "ts": "1.2"},
        {"user": BOT, "bot_id": "B1", "text": "golem's own status", "ts": "1.3"},
        {"bot_id": "B9", "subtype": "bot_message", "text": "a bot says", "ts": "1.4"},
        {"user": "U0ALICE", "text": "last", "ts": "1.5"},
    ]
    rendered = render_thread(
        thread, bot_user=BOT, users={"U0ALICE": object()}, limit=200, mask=str.upper
    )
    assert rendered.text.startswith("(1 earlier messages left out)")
    assert "golem's own" not in rendered.text.lower()
    assert rendered.text.endswith("U0ALICE WROTE:\nLAST")  # masked with ``mask``
    assert rendered.outsiders == ("U0GUEST", "bot")
    assert rendered.dropped == 1


@given(HOSTILE)
def test_nothing_a_run_or_person_wrote_becomes_a_mention_link_or_button(text: str) -> None:
    shown = json.dumps(messages.status_blocks(progress(text, url="golem://local/x/pulls/3")))
    reply = messages.ended(progress(text), "U0ALICE")
    for said in (shown, reply.removeprefix("<@U0ALICE> ")):
        assert "<" not in OWN_LINK.sub("", said), said
    blocks = messages.status_blocks(progress(text, status="waiting"))
    actions = [b for b in blocks if b["type"] == "actions"]
    assert [e["action_id"] for e in actions[0]["elements"]][-1] == "golem.cancel"


def test_a_pull_requests_address_is_linked_only_when_it_is_http() -> None:
    assert (
        mrkdwn.link("https://github.com/o/r/pull/3", "#3") == "<https://github.com/o/r/pull/3|#3>"
    )
    assert mrkdwn.link("golem://local/r/pulls/3", "#3") == "#3 (`golem://local/r/pulls/3`)"
    assert mrkdwn.link("https://x.example/a|<!channel>", "#3").startswith("#3 (`")


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("users", {"alice": {"tenant": "acme"}}, "not Slack user ids"),
        ("users", {"U0ALICE": {"tenant": "../acme"}}, "not a tenant's name"),
        ("users", {"U0ALICE": {"tenant": "acme", "role": "root"}}, "role"),
        ("channels", {"C0CALC": "nowhere"}, "not in server.slack.repos"),
        ("channels", {"general": "calc"}, "not Slack channel ids"),
        ("repos", {"calc ulator": "https://x/y.git"}, "repository names"),
        ("team", "acme", "not a Slack workspace id"),
        ("people", {"allow": ["alice", "S0ENG"]}, "not Slack user .* or user group"),
        ("people", {"guest": True}, "guest"),
        ("people", {"record_ttl": -1}, "record_ttl"),
    ],
)
def test_a_slack_configuration_that_cannot_be_right_is_refused_naming_why(
    field: str, value: object, says: str
) -> None:
    base: dict[str, object] = {"repos": {"calc": "https://x/calc.git"}}
    with pytest.raises(ValueError, match=says):
        SlackConfig.model_validate({**base, field: value})


def test_a_trust_source_is_named_in_lower_case() -> None:
    assert TrustPolicy(sources={"slack": "gvisor"}).sources == {"slack": "gvisor"}
    with pytest.raises(ValueError, match="lower case"):
        TrustPolicy.model_validate({"sources": {"Slack": "gvisor"}})
