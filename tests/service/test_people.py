"""Who may ask golem on Slack and Linear, decided from the person's own record (the rules
alone, on records as the workspaces write them), and how long a record is trusted: the
servers' tests (tests/service/test_slack.py, test_linear_trigger.py) ask through golem serve."""

from __future__ import annotations

from typing import Any

import pytest

from golem.core.people_config import LinearPeople, PeopleRule
from golem.service.linear.client import LinearIssue, LinearUser
from golem.service.linear.people import refusal as linear_refusal
from golem.service.slack.people import SlackPerson
from golem.service.slack.people import refusal as slack_refusal
from golem.service.sources import RecordCache

HOME = ("T0TEAM", None)
GRID = ("T0TEAM", "E0ACME")


class Clock:
    """A clock a test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_record_is_read_once_within_its_ttl_and_again_after() -> None:
    clock, reads = Clock(), []

    async def read() -> str:
        reads.append(clock.now)
        return f"record {len(reads)}"

    cache: RecordCache[str] = RecordCache(ttl=300, size=10, clock=clock)
    assert await cache.get("U0ALICE", read) == "record 1"
    clock.now += 299
    assert await cache.get("U0ALICE", read) == "record 1"
    clock.now += 2
    assert await cache.get("U0ALICE", read) == "record 2"


async def test_the_cache_keeps_at_most_its_size_dropping_the_least_recently_used() -> None:
    reads: list[str] = []

    def reader(key: str) -> Any:
        async def read() -> str:
            reads.append(key)
            return key

        return read

    cache: RecordCache[str] = RecordCache(ttl=300, size=2, clock=Clock())
    for key in ("a", "b", "a", "c", "a", "b"):
        await cache.get(key, reader(key))
    assert len(cache) == 2
    assert reads == ["a", "b", "c", "b"]  # b was dropped for c; a, used last, stayed


async def test_a_failed_read_is_not_kept() -> None:
    calls = 0

    async def read() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("Slack is down")
        return "record"

    cache: RecordCache[str] = RecordCache(ttl=300, size=10, clock=Clock())
    with pytest.raises(RuntimeError):
        await cache.get("U0ALICE", read)
    assert await cache.get("U0ALICE", read) == "record"


def slack_person(**record: Any) -> SlackPerson:
    return SlackPerson.of({"id": "U0ALICE", "team_id": "T0TEAM", **record})


def test_a_slack_guest_may_ask_only_when_the_rule_lets_guests() -> None:
    guest = slack_person(is_restricted=True)
    single = slack_person(is_ultra_restricted=True)
    for person in (guest, single):
        assert "guests" in (slack_refusal(person, PeopleRule(), HOME) or "")
        assert slack_refusal(person, PeopleRule(guests=True), HOME) is None


@pytest.mark.parametrize(
    ("record", "said"),
    [
        ({"is_app_user": True}, "bots and apps"),
        ({"id": "USLACKBOT"}, "bots and apps"),
        ({"is_stranger": True}, "another workspace"),
        ({"team_id": "T0PARTNER"}, "another workspace"),
        ({"team_id": None}, "another workspace"),
        ({"deleted": True, "is_bot": True}, "deactivated"),
    ],
)
def test_a_slack_record_that_is_no_member_of_golems_workspace_may_not_ask(
    record: dict[str, Any], said: str
) -> None:
    refused = slack_refusal(slack_person(**record), PeopleRule(guests=True), HOME)
    assert said in (refused or "")


def test_on_an_enterprise_grid_a_member_of_another_workspace_of_the_organisation_may_ask() -> None:
    sibling = slack_person(team_id="T0OTHER", enterprise_user={"enterprise_id": "E0ACME"})
    assert slack_refusal(sibling, PeopleRule(), GRID) is None
    foreign = slack_person(team_id="T0OTHER", enterprise_user={"enterprise_id": "E0ELSE"})
    assert "another workspace" in (slack_refusal(foreign, PeopleRule(), GRID) or "")


ISSUE = LinearIssue.model_validate(
    {"id": "i-1", "identifier": "ENG-1", "title": "t", "team": {"id": "t-1", "key": "ENG"}}
)


def linear_user(*teams: str, **fields: Any) -> LinearUser:
    nodes = [{"id": f"t-{key}", "key": key} for key in teams]
    return LinearUser.model_validate(
        {"id": "u-1", "name": "Ada", **fields, "teams": {"nodes": nodes}}
    )


def test_a_linear_member_of_another_team_may_ask_only_when_team_members_is_off() -> None:
    ops = linear_user("OPS")
    assert "not a member of team ENG" in (linear_refusal(ops, "u-1", ISSUE, LinearPeople()) or "")
    assert linear_refusal(ops, "u-1", ISSUE, LinearPeople(team_members=False)) is None


def test_linears_allow_names_people_by_id_or_by_their_team() -> None:
    rule = LinearPeople(team_members=False, allow=["OPS", "u-9"])
    assert linear_refusal(linear_user("OPS"), "u-1", ISSUE, rule) is None
    assert linear_refusal(linear_user(id="u-9"), "u-9", ISSUE, rule) is None
    assert "allow" in (linear_refusal(linear_user("ENG"), "u-1", ISSUE, rule) or "")


def test_a_linear_guest_may_ask_only_when_the_rule_lets_guests() -> None:
    guest = linear_user("ENG", guest=True)
    assert "guest" in (linear_refusal(guest, "u-1", ISSUE, LinearPeople()) or "")
    assert linear_refusal(guest, "u-1", ISSUE, LinearPeople(guests=True)) is None
