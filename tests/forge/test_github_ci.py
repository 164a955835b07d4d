"""GitHubForge's CI reads against the loopback GitHub: check runs and commit statuses on a
commit, required checks, and what failed in a job (steps, log tail, annotations)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from golem.core.errors import ForgeNotFound
from golem.forge.ci import CIJob
from golem.forge.github_ci import clean_log, log_excerpt
from golem.testing.github_ci_server import commit_file
from golem.testing.github_server import GitHubServer, github_error
from tests.forge.conftest import git
from tests.forge.github_kit import REPO, TOKEN, TOKEN_ENV, make

SHA = "a" * 40
ESC = "\x1b"


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubServer]:
    """A GitHub API that wants TOKEN, which TOKEN_ENV holds."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with GitHubServer(token=TOKEN) as server:
        yield server


def actions_log(*, filler_lines: int = 0) -> str:
    """An Actions job log as GitHub serves it: timestamps, groups, ANSI colours."""
    stamp = "2024-05-01T12:00:00.1234567Z "
    lines = [
        "##[group]Run actions/checkout@v4",
        "Syncing repository: octo/demo",
        "##[endgroup]",
        "##[group]Run pytest -q",
        "pytest -q",
        "##[endgroup]",
        *(f"tests/test_{n}.py ....  [ {n}%]" for n in range(filler_lines)),
        f"{ESC}[31mFAILED{ESC}[0m tests/test_calc.py::test_add - assert 3 == 4",
        "##[error]Process completed with exit code 1.",
        "Post job cleanup.",
        "Cleaning up orphan processes",
    ]
    return "".join(f"{stamp}{line}\r\n" for line in lines)


async def test_ci_status_maps_check_runs_and_keeps_the_newest_status_per_context(
    github: GitHubServer,
) -> None:
    github.set_checks(
        REPO,
        SHA,
        [
            {"name": "lint", "conclusion": "success"},
            {"name": "test", "conclusion": "failure", "output": {"title": "2 failed"}},
            {"name": "build", "status": "in_progress"},
            {"name": "deploy", "status": "queued"},
            {"name": "docs", "conclusion": "skipped"},
            {"name": "slow", "conclusion": "timed_out"},
            {"name": "gate", "conclusion": "action_required"},
            {"name": "old", "conclusion": "cancelled"},
            {"name": "info", "conclusion": "neutral", "app": "codecov"},
        ],
    )
    github.set_statuses(
        REPO,
        SHA,
        [
            {"context": "ci/jenkins", "state": "failure", "description": "first try"},
            {"context": "ci/jenkins", "state": "success", "description": "Build #2 passed"},
            {"context": "ci/circle", "state": "error", "target_url": "https://circle/1"},
            {"context": "ci/pending", "state": "pending"},
        ],
    )

    status = await make(github).ci_status(REPO, SHA)

    states = {job.name: (job.kind, job.state) for job in status.jobs}
    assert states == {
        "lint": ("check", "passed"),
        "test": ("check", "failed"),
        "build": ("check", "running"),
        "deploy": ("check", "pending"),
        "docs": ("check", "skipped"),
        "slow": ("check", "failed"),
        "gate": ("check", "failed"),
        "old": ("check", "cancelled"),
        "info": ("check", "neutral"),
        "ci/jenkins": ("status", "passed"),
        "ci/circle": ("status", "failed"),
        "ci/pending": ("status", "pending"),
    }
    test = next(job for job in status.jobs if job.name == "test")
    assert (test.summary, test.group) == ("2 failed", "github-actions")
    assert test.url is not None
    assert test.url.startswith("https://github.com/octo/demo/")
    jenkins = next(job for job in status.jobs if job.name == "ci/jenkins")
    assert (jenkins.id, jenkins.summary) == ("ci/jenkins", "Build #2 passed")
    assert (status.commit, status.supported, status.required) == (SHA, True, None)


async def test_ci_status_reads_every_page_of_check_runs(github: GitHubServer) -> None:
    github.set_checks(
        REPO, SHA, [{"name": f"job {n}", "conclusion": "success"} for n in range(130)]
    )

    status = await make(github).ci_status(REPO, SHA)

    assert sorted(job.name for job in status.jobs) == sorted(f"job {n}" for n in range(130))
    pages = [r.path for r in github.requests if "/check-runs" in r.path]
    assert len(pages) == 2
    assert "page=2" in pages[1]


async def test_ci_status_follows_a_script_of_the_pushed_commit(github: GitHubServer) -> None:
    github.ci = lambda repo, sha: [
        {"name": "test", "conclusion": "success" if sha == SHA else "failure"},
        {"context": "ci/external", "state": "success"},
    ]
    forge = make(github)

    passing = await forge.ci_status(REPO, SHA)
    failing = await forge.ci_status(REPO, "b" * 40)

    assert [(j.name, j.state) for j in passing.jobs] == [
        ("test", "passed"),
        ("ci/external", "passed"),
    ]
    assert next((j.name, j.state) for j in failing.jobs) == ("test", "failed")


async def test_ci_status_can_judge_what_was_pushed_to_a_bare_repository(
    github: GitHubServer, origin: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    git("clone", "-q", str(origin), str(work))
    commit = ("-c", "user.name=T", "-c", "user.email=t@x.invalid", "commit", "-q")
    (work / "ci-result").write_text("fail\n")
    git("add", "ci-result", cwd=work)
    git(*commit, "-m", "red", cwd=work)
    red = git("rev-parse", "HEAD", cwd=work)
    (work / "ci-result").write_text("pass\n")
    git(*commit, "-am", "green", cwd=work)
    green = git("rev-parse", "HEAD", cwd=work)
    git("push", "-q", "origin", "HEAD:main", cwd=work)

    def judge(repo: str, sha: str) -> list[dict[str, Any]]:
        passed = commit_file(origin, sha, "ci-result") == "pass\n"
        return [{"name": "test", "conclusion": "success" if passed else "failure"}]

    github.ci = judge
    forge = make(github)

    assert (await forge.ci_status(REPO, red)).jobs[0].state == "failed"
    assert (await forge.ci_status(REPO, green)).jobs[0].state == "passed"


async def test_ci_status_reads_the_checks_the_base_branch_requires(github: GitHubServer) -> None:
    github.protect(REPO, "main", ["test", "ci/jenkins"])
    forge = make(github)

    protected = await forge.ci_status(REPO, SHA, base="main")
    unprotected = await forge.ci_status(REPO, SHA, base="feature")
    github.push(github.route, github.route, github_error(404, "Branch not found"))
    assert (await forge.ci_status(REPO, SHA, base="gone")).required is None

    assert protected.required == ["test", "ci/jenkins"]
    assert unprotected.required is None


async def test_ci_status_reads_checks_required_by_rulesets_with_branch_protection(
    github: GitHubServer,
) -> None:
    github.protect(REPO, "main", ["test"])
    github.protect(REPO, "main", ["test", "lint"], ruleset=True)
    github.protect(REPO, "release", ["build"], ruleset=True)
    forge = make(github)

    assert (await forge.ci_status(REPO, SHA, base="main")).required == ["test", "lint"]
    assert (await forge.ci_status(REPO, SHA, base="release")).required == ["build"]


async def test_ci_status_on_a_server_without_rulesets_reads_branch_protection(
    github: GitHubServer,
) -> None:
    github.protect(REPO, "main", ["test"])
    rules_gone = github_error(404, "Not Found")
    github.push(github.route, github.route, github.route, rules_gone)

    status = await make(github).ci_status(REPO, SHA, base="main")

    assert status.required == ["test"]


async def test_ci_status_keeps_the_newest_run_of_a_job_and_both_workflows_jobs_of_a_name(
    github: GitHubServer,
) -> None:
    github.set_checks(
        REPO,
        SHA,
        [
            {"name": "build", "conclusion": "failure", "check_suite": {"id": 1}},
            {"name": "build", "conclusion": "success", "check_suite": {"id": 1}},  # re-run
            {"name": "build", "conclusion": "failure", "check_suite": {"id": 2}},
        ],
    )

    jobs = (await make(github).ci_status(REPO, SHA)).jobs

    assert [(job.name, job.state) for job in jobs] == [("build", "passed"), ("build", "failed")]


async def test_ci_status_of_a_commit_github_does_not_know_yet_reports_nothing(
    github: GitHubServer,
) -> None:
    github.push(github_error(422, "No commit found for SHA: " + SHA))

    status = await make(github).ci_status(REPO, SHA)

    assert (status.jobs, status.supported) == ([], True)


async def test_ci_status_of_a_repository_github_does_not_show_is_a_forge_error(
    github: GitHubServer,
) -> None:
    github.push(github_error(404, "Not Found"))

    with pytest.raises(ForgeNotFound, match="check runs of octo/demo"):
        await make(github).ci_status(REPO, SHA)


async def test_ci_failure_of_an_actions_job_has_its_failed_step_and_log_tail_without_the_token(
    github: GitHubServer,
) -> None:
    steps = [("Set up job", "success"), ("Run tests", "failure"), ("Upload", "skipped")]
    github.set_checks(
        REPO, SHA, [{"name": "test", "conclusion": "failure", "steps": steps, "log": actions_log()}]
    )
    forge = make(github)
    job = (await forge.ci_status(REPO, SHA)).jobs[0]

    failed = await forge.ci_failure(REPO, job)

    assert failed.failed_steps == ["Run tests"]
    assert "FAILED tests/test_calc.py::test_add - assert 3 == 4" in failed.log_tail
    assert failed.log_tail.startswith("Run pytest -q")
    assert failed.log_tail.endswith("##[error]Process completed with exit code 1.")
    assert "2024-05-01T" not in failed.log_tail
    assert ESC not in failed.log_tail
    assert "Post job cleanup" not in failed.log_tail
    downloads = github.logs.requests
    assert len(downloads) == 1
    assert "authorization" not in downloads[0].headers
    assert all(TOKEN not in value for value in downloads[0].headers.values())
    assert TOKEN not in failed.log_tail


async def test_ci_failure_keeps_a_bounded_tail_of_a_long_log(github: GitHubServer) -> None:
    log = actions_log(filler_lines=20_000)
    github.set_checks(REPO, SHA, [{"name": "test", "conclusion": "failure", "log": log}])
    forge = make(github)
    job = (await forge.ci_status(REPO, SHA)).jobs[0]

    failed = await forge.ci_failure(REPO, job)

    assert len(log) > 500_000
    assert 0 < len(failed.log_tail) <= 6000
    assert failed.log_tail.endswith("##[error]Process completed with exit code 1.")
    assert "FAILED tests/test_calc.py::test_add" in failed.log_tail


async def test_ci_failure_with_an_expired_log_says_so_in_its_tail(github: GitHubServer) -> None:
    steps = [("Run tests", "failure")]
    github.set_checks(REPO, SHA, [{"name": "test", "conclusion": "failure", "steps": steps}])
    forge = make(github)
    job = (await forge.ci_status(REPO, SHA)).jobs[0]

    failed = await forge.ci_failure(REPO, job)

    assert failed.failed_steps == ["Run tests"]
    assert failed.log_tail.startswith("(its log could not be read:")


async def test_ci_failure_the_token_may_not_read_is_a_note_saying_why(
    github: GitHubServer,
) -> None:
    output = {"title": "3 tests failed"}
    github.set_checks(REPO, SHA, [{"name": "test", "conclusion": "failure", "output": output}])
    forge = make(github)
    job = (await forge.ci_status(REPO, SHA)).jobs[0]
    github.push(github.route, github_error(403, "Resource not accessible by integration"))

    failed = await forge.ci_failure(REPO, job)

    assert failed.failed_steps == []
    assert failed.log_tail.startswith("3 tests failed\n(what failed in it could not be read:")
    assert "Resource not accessible by integration" in failed.log_tail


async def test_ci_failure_of_another_apps_check_reads_its_output_and_failure_annotations(
    github: GitHubServer,
) -> None:
    annotations = [
        {"path": "src/calc.py", "start_line": 3, "end_line": 3, "annotation_level": "failure",
         "message": "F821 undefined name 'x'", "title": "ruff"},
        {"path": "src/calc.py", "start_line": 9, "end_line": 9, "annotation_level": "notice",
         "message": "consider a docstring", "title": "ruff"},
    ]  # fmt: skip
    output = {"title": "Lint failed", "summary": "1 error", "text": "see the annotations"}
    github.set_checks(
        REPO,
        SHA,
        [{"name": "lint", "conclusion": "failure", "app": "ruff-ci", "output": output,
          "annotations": annotations}],
    )  # fmt: skip
    forge = make(github)
    job = (await forge.ci_status(REPO, SHA)).jobs[0]

    failed = await forge.ci_failure(REPO, job)

    assert "Lint failed" in failed.log_tail
    assert "1 error" in failed.log_tail
    assert "src/calc.py:3: F821 undefined name 'x'" in failed.log_tail
    assert "consider a docstring" not in failed.log_tail
    assert not github.logs.requests


async def test_ci_failure_of_a_commit_status_tells_its_description_and_link(
    github: GitHubServer,
) -> None:
    job = CIJob(
        id="ci/jenkins",
        name="ci/jenkins",
        kind="status",
        state="failed",
        url="https://jenkins.example/job/7",
        summary="Build #7 failed",
    )

    failed = await make(github).ci_failure(REPO, job)

    assert failed.log_tail == "Build #7 failed\nDetails: https://jenkins.example/job/7"
    assert not github.requests


def test_clean_log_strips_timestamps_colours_and_group_markers() -> None:
    stamp = "2024-01-01T00:00:00.0000000Z "
    lines = ["##[group]Run make", f"{ESC}[1;31merror{ESC}[0m: x", "##[endgroup]"]
    raw = "".join(f"{stamp}{line}\r\n" for line in lines)

    assert clean_log(raw) == "Run make\nerror: x\n"


def test_log_excerpt_without_an_error_line_is_the_logs_end() -> None:
    text = "\n".join(f"line {n}" for n in range(5000))

    excerpt = log_excerpt(text, limit=100)

    assert excerpt.endswith("line 4999")
    assert len(excerpt) == 100
