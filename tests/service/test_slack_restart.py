"""A Slack run across a restart of `golem serve`: the thread and its run are in the store,
so the next server edits the same status message (kept in the store, or found in the
thread when the server before posted it but stopped before keeping it), answers its
buttons, and replies once when the run ends; Slack's retry of the first request, arriving
at the new server, starts nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from golem.testing.slack_server import SlackServer
from tests.blueprint.repos import make_remote
from tests.service.polling import eventually
from tests.service.served import launch
from tests.service.slack_kit import (
    BOT_TOKEN,
    SERVER_ENV,
    add_people,
    buttons,
    click,
    deliver,
    gated_first,
    mention,
    replies_saying,
    run_of,
    slack_config,
    status_posts,
    status_showing,
)


def test_a_restarted_server_goes_on_with_the_same_status_message_and_starts_nothing_twice(
    tmp_path: Path,
) -> None:
    """The first server is stopped as if it had posted the status message but not kept
    it yet: the next one finds that message in the thread rather than posting another."""
    with SlackServer(token=BOT_TOKEN) as slack:
        add_people(slack)
        config = slack_config(slack, gated_first(tmp_path), {"calculator": make_remote(tmp_path)})
        first = launch(tmp_path / "state", config=config, env=SERVER_ENV)
        try:
            key = first.key("acme")
            answer, _, payload = mention(first, slack, "fix add()")
            run_id = answer.json()["run_id"]
            status_ts, _ = status_showing(slack, run_id, lambda m: "golem.cancel" in buttons(m))
        finally:
            first.stop()
        with sqlite3.connect(tmp_path / "state" / "golem.db") as database:
            database.execute("UPDATE source_threads SET status = NULL")  # posted, not kept
        second = launch(
            tmp_path / "state", config=config, env=SERVER_ENV, admin_key=first.admin_key
        )
        try:
            retried = deliver(second, payload, **{"X-Slack-Retry-Num": "3"})
            assert retried.json()["status"] == "duplicate", retried.text
            assert retried.json()["run_id"] == run_id
            assert click(second, "golem.cancel", run_id, status_ts).json()["status"] == "ok"
            status_showing(slack, run_id, lambda m: "cancelled" in m["text"])
            assert run_of(second, key, run_id)["status"] == "cancelled"
            thread_ts = status_posts(slack, run_id)[0].args["thread_ts"]
            eventually(lambda: replies_saying(slack, thread_ts, "was cancelled") or None, "reply")
        finally:
            second.stop()
        assert len(status_posts(slack, run_id)) == 1  # the same message, edited by both
        assert len(replies_saying(slack, thread_ts, "was cancelled")) == 1
        updates = {c.args["ts"] for c in slack.calls("chat.update") if run_id in c.args["text"]}
        assert updates == {status_ts}
