"""`golem eval` as a team runs it on its own repository: a history whose commits fix bugs
with tests (tests/acceptance/repos/fixes), real git, real boxes, the local forge, the
`golem` command.

- `eval make` turns exactly the commits that fix a bug with a test into tasks, each with
  the tests that fail before its fix and pass after it, and leaves the others out with why;
- `eval run` with a model that replays each upstream fix resolves every task, and golem's
  verification verified each one; killed after its first attempt, it resumes without
  running a finished attempt again;
- with a model that makes a wrong fix it resolves none, and the agreement of golem's
  verdicts with the hidden tests is exactly what each run deserved;
- `eval compare` puts the two side by side, as JSON and as a page with each task's diffs;
- in a Go module and a Cargo crate whose last commit fixes a bug with a test, `eval make`
  finds the task and its fail-to-pass test by the name its runner gives it, and the
  upstream fix resolves both;
- with a provider's model (OpenAI's official client, a loopback server speaking its wire
  protocol) a task's run is charged its model turns at the model's price, and the prompts
  never held the hidden tests.

The module's runs share one state directory, so the three tasks are made once.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from golem.agent.messages import Usage
from golem.agent.models import cost_usd, price_for
from golem.eval import read_tasks
from golem.testing.models import TEST_KEY, OpenAIServer, Reply
from golem.testing.openai_server import ToolCall, stream_reply
from tests.acceptance.ecosystems import (
    CARGO_CRATE,
    GO_MODULE,
    Edit,
    fixed_history,
    fixes_remote,
    git,
    scripted_edits,
)

pytestmark = pytest.mark.bwrap

WORDS, LINES, INITIALS = 1, 3, 5  # the fixing commits, by index in the history
WRONG = {
    WORDS: Edit("textstats.py", 'len(text.split(" "))', 'len(text.strip().split(" "))'),
    LINES: Edit("textstats.py", 'return text.count("\\n")', 'return text.count("\\n") + 1'),
    INITIALS: Edit("textstats.py", "word[0] for", "word[0].lower() for"),
}
"""A wrong fix per task: the first passes the repository's own tests (golem verifies it),
the two others break one (golem escalates them)."""


@pytest.fixture(scope="module")
def shared() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="golem-eval-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def env(shared: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    return {**clean, "GOLEM_STATE_DIR": str(shared / "state"),
            "XDG_CONFIG_HOME": str(shared / "cfg"), "COLUMNS": "200"}  # fmt: skip


@pytest.fixture(scope="module")
def commits(shared: Path) -> list[str]:
    remote = fixes_remote(shared)
    return git("log", "--reverse", "--format=%H", "main", cwd=remote).split()


def golem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "golem", *args], env=env, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def made(shared: Path, env: dict[str, str], commits: list[str]) -> Path:
    tasks = shared / "tasks.jsonl"
    done = golem(env, "eval", "make", "--repo", str(shared / "fixes.git"),
                 "--commits", f"{commits[0]}..main", "--out", str(tasks))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return tasks


@dataclass(frozen=True)
class Resumed:
    """An evaluation killed after its first attempt, then run again to its end."""

    out: Path
    before: dict[str, str]
    again: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def gold(shared: Path, env: dict[str, str], made: Path) -> Resumed:
    out = shared / "gold"
    args = ["eval", "run", str(made), "--model", "gold", "--parallel", "1", "--out", str(out)]
    running = subprocess.Popen(
        [sys.executable, "-m", "golem", *args], env=env, stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL, start_new_session=True, text=True,
    )  # fmt: skip
    try:
        _read_until(running, "✓ ")
    finally:
        os.killpg(running.pid, signal.SIGKILL)
        running.wait()
        assert running.stderr is not None
        running.stderr.close()
    before = {str(p): p.read_text() for p in sorted(out.glob("attempts/*/*.json"))}
    return Resumed(out, before, golem(env, *args, "--json"))


def _read_until(process: subprocess.Popen[str], marker: str) -> str:
    assert process.stderr is not None
    seen = ""
    while marker not in seen:
        ready, _, _ = select.select([process.stderr], [], [], 300)
        assert ready, f"no {marker!r} in: {seen}"
        line = process.stderr.readline()
        assert line, f"it ended before {marker!r}: {seen}"
        seen += line
    return seen


@pytest.fixture(scope="module")
def wrong(shared: Path, env: dict[str, str], made: Path, commits: list[str]) -> dict[str, object]:
    scripts = shared / "wrong"
    scripts.mkdir()
    for index, edit in WRONG.items():
        scripted_edits(scripts, f"fixes-{commits[index][:12]}", [edit])
    model = f"scripted:{scripts}/{{instance_id}}.yaml"
    done = golem(env, "eval", "run", str(made), "--model", model, "--parallel", "3",
                 "--out", str(shared / "wrong-fixes"), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_make_turns_each_fixing_commit_into_a_task_with_its_fail_to_pass_tests(
    made: Path, commits: list[str]
) -> None:
    tasks = read_tasks(made)
    assert [t.instance_id for t in tasks] == [
        f"fixes-{commits[i][:12]}" for i in (WORDS, LINES, INITIALS)
    ]
    assert [t.FAIL_TO_PASS for t in tasks] == [
        ["test_words.CountWords.test_empty"],
        ["test_lines.CountLines.test_last_line_without_newline"],
        ["test_initials.Initials.test_lower_case_names"],
    ]
    assert tasks[0].PASS_TO_PASS == [
        "test_initials.Initials.test_initials", "test_lines.CountLines.test_lines",
        "test_words.CountWords.test_words",
    ]  # fmt: skip
    for task, index in zip(tasks, (WORDS, LINES, INITIALS), strict=True):
        assert task.base_commit == commits[index - 1]
        assert task.problem_statement.startswith(git("log", "-1", "--format=%s", commits[index],
                                                     cwd=Path(task.repo)).strip())  # fmt: skip
        assert [line for line in task.patch.splitlines() if line.startswith("diff --git")] == [
            "diff --git a/textstats.py b/textstats.py"
        ]
        assert "textstats.py" not in task.test_patch
        assert task.golem_test_commands == ["python3 -m unittest discover -v"]
    lines = made.with_name("tasks.left-out.jsonl").read_text().splitlines()
    left_out = [json.loads(line) for line in lines]
    assert {item["source"].split()[-1]: item["reason"] for item in left_out} == {
        commits[2]: "it changes no test file: nothing could tell a fix from another",
        commits[4]: "it changes only tests: there is no fix to make",
        commits[6]: "no test fails before the fix: its tests pass without it too",
    }


def test_the_upstream_fix_resolves_every_task_and_a_killed_run_resumes_where_it_stopped(
    gold: Resumed,
) -> None:
    assert 1 <= len(gold.before) < 3, gold.before
    assert gold.again.returncode == 0, gold.again.stderr
    assert f"{3 - len(gold.before)} attempt(s) to run" in gold.again.stderr
    for path, text in gold.before.items():
        assert Path(path).read_text() == text  # a finished attempt is never run again
    report = json.loads(gold.again.stdout)
    totals, agreement = report["totals"], report["agreement"]
    assert (totals["attempts"], totals["resolved"], totals["not_run"]) == (3, 3, 0)
    assert totals["verdicts"] == {"verified": 3, "escalated": 0, "unverified": 0, "failed": 0}
    assert (agreement["agreed"], agreement["judged"], agreement["rate"]) == (3, 3, 1.0)
    assert {"implement", "verify", "ship"} <= set(totals["mean_node_seconds"])
    attempts = sorted(gold.out.glob("attempts/*/*.json"))
    assert len(attempts) == 3
    for file in attempts:
        attempt = json.loads(file.read_text())
        assert attempt["score"]["fail_to_pass"] == dict.fromkeys(attempt["score"]["fail_to_pass"],
                                                                 "passed")  # fmt: skip
        assert "+++ b/textstats.py" in attempt["patch"]


def test_a_wrong_fix_resolves_nothing_and_the_agreement_is_exactly_what_each_run_deserved(
    wrong: dict[str, object], commits: list[str]
) -> None:
    totals, agreement = wrong["totals"], wrong["agreement"]
    assert isinstance(totals, dict)
    assert isinstance(agreement, dict)
    assert (totals["attempts"], totals["resolved"]) == (3, 0)
    assert agreement["matrix"] == {
        "verified": {"resolved": 0, "unresolved": 1},
        "escalated": {"resolved": 0, "unresolved": 2},
        "unverified": {"resolved": 0, "unresolved": 0},
        "failed": {"resolved": 0, "unresolved": 0},
    }
    assert (agreement["agreed"], agreement["judged"]) == (2, 3)
    assert (agreement["verified_unresolved"], agreement["escalated_resolved"]) == (1, 0)
    assert agreement["verified_precision"] == 0.0
    tasks = wrong["tasks"]
    assert isinstance(tasks, list)
    verdicts = {task["instance_id"]: task["verdicts"] for task in tasks}
    assert verdicts[f"fixes-{commits[WORDS][:12]}"] == {"verified": 1}
    assert verdicts[f"fixes-{commits[LINES][:12]}"] == {"escalated": 1}


def test_compare_sets_two_evaluations_side_by_side_with_each_tasks_diffs(
    shared: Path, env: dict[str, str], gold: Resumed, wrong: dict[str, object]
) -> None:
    page = shared / "compare.html"
    done = golem(env, "eval", "compare", str(gold.out), str(shared / "wrong-fixes"),
                 "--json", "--html", str(page))  # fmt: skip
    assert done.returncode == 0, done.stderr
    comparison = json.loads(done.stdout)
    assert (comparison["gained"], comparison["lost"]) == (0, 3)
    assert comparison["differs"] == [f"model: gold / scripted:{shared}/wrong/{{instance_id}}.yaml"]
    html = page.read_text()
    assert "<span class='add'>+    return len(text.split())</span>" in html  # the gold's
    assert "+    return len(text.strip().split(&quot; &quot;))" in html  # the wrong one's
    table = golem(env, "eval", "compare", str(gold.out), str(shared / "wrong-fixes"))
    assert "B gained 0 task(s) and lost 3" in table.stdout


def test_a_providers_model_is_charged_its_turns_and_never_shown_the_hidden_tests(
    shared: Path, env: dict[str, str], made: Path
) -> None:
    task = read_tasks(made)[0]
    toml = shared / "openai.toml"
    with OpenAIServer(api_key=TEST_KEY) as server:
        toml.write_text(f'[models.openai]\nbase_url = "{server.base_url}"\n'
                        'api_key_env = "GOLEM_TEST_PROVIDER_KEY"\n')  # fmt: skip
        server.push(
            call("write", path="fix.patch", content=task.patch),
            call("bash", command="git apply fix.patch && rm fix.patch"),
        )
        server.otherwise(call("finish", summary="fixed"))
        args = ["--model", "openai/gpt-5-mini", "--budget-usd", "1", "--limit", "1",
                "--out", str(shared / "provider"), "--config", str(toml), "--json"]  # fmt: skip
        done = golem({**env, "GOLEM_TEST_PROVIDER_KEY": TEST_KEY}, "eval", "run", str(made), *args)
        requests = server.requests
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    [summary] = [t for t in report["tasks"] if t["instance_id"] == task.instance_id]
    assert (summary["resolved"], summary["verdicts"]) == (1, {"verified": 1})
    price = price_for("openai/gpt-5-mini")
    one_reply = cost_usd(Usage(input_tokens=10, output_tokens=5), price)  # the server's usage
    totals = report["totals"]
    assert totals["mean_turns"] == len(requests) >= 3
    assert totals["cost_usd"] == pytest.approx(len(requests) * one_reply)
    assert one_reply > 0
    for request in requests:  # what the agent was shown: the task, never its hidden tests
        assert "test_empty" not in request.body.decode()


def call(tool: str, **arguments: str) -> Reply:
    """The provider's reply that calls ``tool`` with ``arguments``."""
    return stream_reply(tool_calls=[ToolCall(tool, arguments)])


def test_a_go_modules_and_a_cargo_crates_fixes_become_tasks_that_their_upstream_fix_resolves(
    shared: Path, env: dict[str, str]
) -> None:
    makes = {}
    for ecosystem in (GO_MODULE, CARGO_CRATE):
        remote = fixed_history(shared, ecosystem)
        makes[ecosystem.name] = subprocess.Popen(
            [sys.executable, "-m", "golem", "eval", "make", "--repo", str(remote), "--commits",
             "main~1..main", "--out", str(shared / f"{ecosystem.name}.jsonl")],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    for name, making in makes.items():
        _, errors = making.communicate(timeout=600)
        assert making.returncode == 0, f"{name}: {errors}"
    [go] = read_tasks(shared / "gomod.jsonl")
    [rust] = read_tasks(shared / "crate.jsonl")
    assert (go.FAIL_TO_PASS, go.PASS_TO_PASS) == (
        ["example.com/clamp.TestAbove"],
        ["example.com/clamp.TestInRangeAndBelow"],
    )
    assert (rust.FAIL_TO_PASS, rust.PASS_TO_PASS) == (
        ["does_not_overflow"],
        ["tests::small_numbers"],
    )
    both = shared / "compiled.jsonl"
    both.write_text((shared / "gomod.jsonl").read_text() + (shared / "crate.jsonl").read_text())
    done = golem(env, "eval", "run", str(both), "--model", "gold", "--parallel", "2", "--json")
    assert done.returncode == 0, done.stderr
    totals = json.loads(done.stdout)["totals"]
    assert (totals["attempts"], totals["resolved"]) == (2, 2)
    assert totals["verdicts"]["verified"] == 2
