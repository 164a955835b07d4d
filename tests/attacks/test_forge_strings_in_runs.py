"""Forge strings through whole runs: an issue whose title, body, labels, comments and their
authors, and a pull request's CI whose job names, step names, check titles, status
contexts, descriptions and links, carry terminal escapes (OSC 8, OSC 52, CSI, C1),
bidirectional overrides, invisible characters, mentions and markdown break-outs. The run
(its CI red, so handed to a person) keeps none of it in its events or saved state,
`golem runs show --events` prints none of it, and the escalation comment, the issue's
comment and the pull request's body hold no control character, no live mention, no link
or HTML of the attacker's (its title, plain text on the forge, no control character): on
GitHub and on GitLab, through the real clients and a real `golem` process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.core import GolemConfig, load_config
from golem.sandbox import Engine
from golem.store import SqlStore
from golem.testing.git_http_server import GitHttpServer
from golem.testing.github_server import GitHubServer
from golem.testing.gitlab_server import GitLabServer
from tests.attacks.hostile_strings import HOSTILE, acting
from tests.blueprint.ci_rounds import minion
from tests.blueprint.gitlab_runs import head
from tests.blueprint.repos import EXAMPLES, git, make_remote

pytestmark = pytest.mark.bwrap

TOKEN = "ghp_golemForgeStringsRun0123456789"  # noqa: S105 - a test token
TOKEN_ENV = "GOLEM_TEST_FORGE_TOKEN"  # noqa: S105 - a variable's name
REPO, PROJECT = "octo/calculator", "group/calculator"
FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
TITLE = f"add() subtracts {HOSTILE}"
NAME = f"{HOSTILE}\nsecond line"
"""A CI name with a newline too (a table cell, a heading or a list item it must not end)."""
ATTACKER = ("@everyone", "@admin", "evil.example", "<img", "&lt;img", "owned")
"""What must never be live in what golem writes on the forge (outside code)."""
MARKDOWN = MarkdownIt("commonmark").enable("table")
CODE = re.compile(r"<code>.*?</code>|<pre>.*?</pre>", re.DOTALL)


def live(body: str) -> list[str]:
    """What of the attacker's is live in ``body`` as a forge renders it: outside code."""
    outside = CODE.sub("", MARKDOWN.render(body))
    return [mark for mark in ATTACKER if mark in outside]


def hostile_github_ci(repo: str, sha: str) -> list[dict[str, Any]]:
    log = f"##[group]Run tests\n##[error]{HOSTILE}\n"
    return [
        {"name": NAME, "conclusion": "failure", "steps": [(NAME, "failure")], "log": log},
        {
            "name": "lint",
            "conclusion": "failure",
            "app": "super-linter",
            "output": {"title": NAME, "summary": HOSTILE},
            "html_url": HOSTILE,
        },
        {"context": NAME, "state": "failure", "description": NAME, "target_url": HOSTILE},
    ]


def hostile_gitlab_ci(project: str, sha: str) -> list[dict[str, Any]]:
    trace = f"$ python3 -m unittest\n{HOSTILE}\n"
    fields = {"stage": NAME, "failure_reason": NAME, "web_url": HOSTILE}
    return [{"name": NAME, "status": "failed", "trace": trace, **fields}]


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubServer]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with GitHubServer(token=TOKEN) as server:
        comments = [HOSTILE, (HOSTILE, "me too")]
        server.add_issue(REPO, 7, TITLE, body=HOSTILE, labels=[HOSTILE], comments=comments)
        server.ci = hostile_github_ci
        yield server


@pytest.fixture
def gitlab(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitLabServer]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with GitLabServer(token=TOKEN) as server:
        notes = [HOSTILE, (HOSTILE, "me too")]
        server.add_issue(PROJECT, 7, TITLE, HOSTILE, labels=[HOSTILE], notes=notes)
        server.ci = hostile_gitlab_ci
        yield server


@pytest.fixture
def served(reachable_dir: Path) -> Iterator[GitHttpServer]:
    root = reachable_dir / "served"
    (root / "group").mkdir(parents=True)
    remote = make_remote(root / "group")
    git("config", "http.receivepack", "true", cwd=remote)
    with GitHttpServer(root, TOKEN, username="oauth2") as server:
        yield server


def forge_config(config: GolemConfig, forge: dict[str, Any]) -> GolemConfig:
    data = config.model_dump(mode="json")
    data["forge"] = forge
    return load_config(data, files=[])


def github_config(config: GolemConfig, github: GitHubServer) -> GolemConfig:
    section = {"api_url": github.api_url, "token_env": TOKEN_ENV}
    return forge_config(config, {"provider": "github", "github": section})


async def escalated(config: GolemConfig, engine: Engine, request: RunRequest) -> RunState:
    store = await SqlStore.open(config)
    try:
        state = await Runner(config, engine=engine, store=store).start(request)
    finally:
        await store.close()
    assert state.status == "escalated", state.error
    assert state.ci[-1].verdict == "failed"
    return state


async def kept(config: GolemConfig, run_id: str) -> tuple[RunState, list[Any]]:
    """The run and its events as golem's store has them."""
    store = await SqlStore.open(config)
    try:
        book = RunBook(store)
        state = await book.load(run_id)
        events = [event for _, event in await book.events(run_id)]
    finally:
        await store.close()
    assert state is not None
    return state, events


def runs_show(config: GolemConfig, run_id: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env.update(GOLEM_STATE_DIR=str(config.state_dir), COLUMNS="300")
    done = subprocess.run(
        [sys.executable, "-m", "golem", "runs", "show", "--events", run_id],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


async def assert_nothing_acts(config: GolemConfig, state: RunState) -> None:
    saved, events = await kept(config, state.id)
    assert acting(saved) == []
    assert acting([json.loads(event.model_dump_json()) for event in events]) == []
    assert "@everyone @admin" in saved.task_text  # the issue's words came along
    assert any("@everyone @admin" in failing for failing in saved.ci[-1].failing)
    shown = runs_show(config, state.id)
    assert [hit for hit in acting(shown) if hit[1] != "U+000A"] == []
    assert "add() subtracts" in shown
    assert "@everyone @admin" in shown


def assert_written_safely(name: str, body: str) -> None:
    assert acting(body) == [], name
    assert live(body) == [], name


async def test_a_github_runs_forge_strings_reach_no_terminal_or_comment_live(
    config: GolemConfig, engine: Engine, github: GitHubServer, reachable_dir: Path
) -> None:
    config = github_config(config, github)
    request = RunRequest(
        repo=str(make_remote(reachable_dir)), issue=f"{REPO}#7", model=FIX, forge="github",
        blueprint=minion(reachable_dir, ci_rounds=0),
    )  # fmt: skip
    state = await escalated(config, engine, request)
    await assert_nothing_acts(config, state)
    [pr] = github.pulls(REPO)
    handed = github.comments(REPO, pr["number"])[-1]["body"]
    assert "CI still fails" in handed
    assert "@everyone @admin" in handed  # said, as code
    for name, body in {
        "escalation": handed,
        "issue comment": github.comments(REPO, 7)[-1]["body"],
        "pull request": pr["body"],
    }.items():
        assert_written_safely(name, body)
    assert acting(pr["title"]) == []


async def test_a_gitlab_runs_forge_strings_reach_no_terminal_or_comment_live(
    config: GolemConfig,
    engine: Engine,
    gitlab: GitLabServer,
    served: GitHttpServer,
    tmp_path: Path,
) -> None:
    remote = served.root / "group" / "calculator.git"
    gitlab.head_sha = lambda project, branch: head(remote, branch)
    gitlab_section = {"base_url": gitlab.base_url, "token_env": TOKEN_ENV, "token_for_git": True}
    config = forge_config(config, {"provider": "gitlab", "gitlab": gitlab_section})
    request = RunRequest(
        repo=served.url_for("group/calculator.git"), issue=f"{PROJECT}#7", model=FIX,
        forge="gitlab", blueprint=minion(tmp_path, ci_rounds=0),
    )  # fmt: skip
    state = await escalated(config, engine, request)
    await assert_nothing_acts(config, state)
    [mr] = gitlab.merge_requests(PROJECT)
    discussions = gitlab.project(PROJECT).discussions.get(mr["iid"], [])
    handed = [note["body"] for d in discussions for note in d["notes"]][-1]
    assert "CI still fails" in handed
    assert "@everyone @admin" in handed
    for name, body in {
        "escalation": handed,
        "issue note": gitlab.project(PROJECT).issue_notes[7][-1]["body"],
        "merge request": mr["description"],
    }.items():
        assert_written_safely(name, body)
    assert acting(mr["title"]) == []


async def test_a_github_follow_ups_review_strings_reach_no_terminal_or_comment_live(
    config: GolemConfig, engine: Engine, github: GitHubServer, reachable_dir: Path, tmp_path: Path
) -> None:
    config = github_config(config, github)
    remote = make_remote(reachable_dir)
    work = reachable_dir / "by-hand"
    git("clone", "-q", str(remote), str(work), cwd=reachable_dir)
    git("checkout", "-q", "-b", "golem/fix-add", cwd=work)
    git("push", "-q", "origin", "golem/fix-add", cwd=work)
    github.head_sha = lambda repo, branch: git("rev-parse", branch, cwd=remote).strip()
    number = github.add_pull(REPO, "golem/fix-add", title=TITLE, body=HOSTILE)["number"]
    root = github.add_review_comment(
        REPO, number, HOSTILE, author=HOSTILE, path="calculator.py", line=5
    )
    github.add_review(REPO, number, HOSTILE, "CHANGES_REQUESTED", HOSTILE)
    github.add_comment(REPO, number, HOSTILE, author=HOSTILE)
    turns = [
        {"tool_calls": [{"name": "edit", "arguments": {
            "path": "calculator.py", "old": "return a - b", "new": "return a + b"}}]},
        {"tool_calls": [{"name": "reply", "arguments": {
            "thread": str(root["id"]), "body": "Done."}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "fixed add"}}]},
    ]  # fmt: skip
    script = tmp_path / "answer.yaml"
    script.write_text(json.dumps({"turns": turns}))
    asked = {"repo": REPO, "number": number, "requested_by": "alice", "request": "@golem fix"}
    request = RunRequest.model_validate(
        {"repo": str(remote), "model": f"scripted:{script}", "forge": "github",
         "follow_up": asked}
    )  # fmt: skip
    state = await escalated(config, engine, request)
    saved, events = await kept(config, state.id)
    assert acting(saved) == []
    assert acting([json.loads(event.model_dump_json()) for event in events]) == []
    assert "@everyone @admin" in saved.task_text  # the review came along
    shown = runs_show(config, state.id)
    assert [hit for hit in acting(shown) if hit[1] != "U+000A"] == []
    written = [c["body"] for c in github.comments(REPO, number)][-2:]
    written += [c["body"] for c in github.review_comments(REPO, number) if c.get("in_reply_to_id")]
    assert len(written) == 3
    for body in written:
        assert_written_safely("follow-up comment", body)
