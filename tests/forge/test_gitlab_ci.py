"""GitLabForge's CI and review reads against the loopback GitLab: pipelines, jobs, commit
statuses, job traces, discussions, approvals, replies, reviewers and permissions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from golem.core.errors import ForgeAuthError, ForgeNotFound
from golem.forge import PullRequest
from golem.forge.config import GitLabConfig
from golem.forge.gitlab import GitLabForge
from golem.forge.gitlab_ci import TRACE_BYTES, failed_section
from golem.testing.gitlab_server import GitLabServer, gitlab_error

TOKEN = "glpat-golemCITest0123456789"  # noqa: S105 (a test token)
PROJECT = "group/demo"
SHA = "c0ffee" + "0" * 34
ESC = "\x1b[0K"


def section(name: str, body: str, *, end: bool = True) -> str:
    """A runner log section as GitLab's runner writes it."""
    text = f"section_start:1700000000:{name}\r{ESC}\x1b[36;1m{name} header\x1b[0;m\n{body}"
    return text + (f"section_end:1700000001:{name}\r{ESC}" if end else "")


PYTEST_FAILS = (
    section("prepare_executor", "Using docker image python:3.12\n")
    + section("get_sources", "Fetching changes...\n")
    + section("step_script", "$ pytest -q\n\x1b[31mFAILED tests/test_calc.py::test_add\x1b[0m\n")
    + section("upload_artifacts_on_failure", "Uploading artifacts...\n")
    + section("cleanup_file_variables", "Cleaning up project directory\n")
    + "\x1b[31;1mERROR: Job failed: exit code 1\n\x1b[0;m"
)


@pytest.fixture
def gitlab() -> Iterator[GitLabServer]:
    with GitLabServer(token=TOKEN) as server:
        server.project(PROJECT)
        yield server


def make(server: GitLabServer) -> GitLabForge:
    return GitLabForge(GitLabConfig(base_url=server.base_url), token=TOKEN, backoff=0)


async def open_mr(server: GitLabServer) -> PullRequest:
    server.project(PROJECT).new_mr("golem/fix", "main", "fix: the parser", sha=SHA)
    return await make(server).fetch_pull_request(PROJECT, 1)


async def test_ci_status_reads_the_jobs_of_the_pipeline_and_external_statuses(
    gitlab: GitLabServer,
) -> None:
    jobs: list[dict[str, Any]] = [
        {"name": "lint", "stage": "check", "status": "success"},
        {"name": "test", "stage": "test", "status": "failed", "trace": PYTEST_FAILS},
        {"name": "test", "stage": "test", "status": "running"},  # the retry, newer
        {"name": "docs", "status": "failed", "allow_failure": True},
        {"name": "deploy", "stage": "deploy", "status": "manual"},
    ]
    gitlab.ci = lambda project, sha: jobs if (project, sha) == (PROJECT, SHA) else []
    gitlab.add_status(PROJECT, SHA, "jenkins", "failed", description="2 tests failed")

    status = await make(gitlab).ci_status(PROJECT, SHA, base="main")

    by_name = {job.name: job for job in status.jobs}
    assert list(by_name) == ["lint", "test", "docs", "deploy", "jenkins"]
    assert [(j.kind, j.state, j.group) for j in status.jobs] == [
        ("job", "passed", "check"), ("job", "running", "test"), ("job", "failed", "test"),
        ("job", "skipped", "deploy"), ("status", "failed", ""),
    ]  # fmt: skip
    assert by_name["docs"].allowed_to_fail
    assert by_name["jenkins"].summary == "2 tests failed"
    assert by_name["deploy"].summary == "manual: runs when a person starts it"
    assert by_name["test"].url is not None
    assert by_name["test"].url.endswith("/-/jobs/" + by_name["test"].id)
    assert status.required is None
    assert status.url is not None
    assert "/-/pipelines/" in status.url
    assert status.supported


async def test_a_commit_without_a_pipeline_has_no_jobs(gitlab: GitLabServer) -> None:
    status = await make(gitlab).ci_status(PROJECT, SHA)

    assert (status.jobs, status.url, status.commit) == ([], None, SHA)
    asked = [r.path.split("?")[0] for r in gitlab.requests]
    assert asked == [
        "/api/v4/projects/group%2Fdemo/pipelines",
        f"/api/v4/projects/group%2Fdemo/repository/commits/{SHA}/statuses",
    ]


async def test_a_project_without_ci_cd_has_no_ci_and_a_refusal_stays_an_error(
    gitlab: GitLabServer,
) -> None:
    gitlab.project(PROJECT).jobs_enabled = False

    status = await make(gitlab).ci_status(PROJECT, SHA)

    assert (status.supported, status.jobs) == (False, [])
    gitlab.project(PROJECT).jobs_enabled = True
    gitlab.push(gitlab_error(403, "403 Forbidden"), gitlab.route)
    with pytest.raises(ForgeAuthError, match="403 Forbidden"):
        await make(gitlab).ci_status(PROJECT, SHA)


async def test_ci_failure_names_the_failed_section_and_keeps_its_log(
    gitlab: GitLabServer,
) -> None:
    gitlab.ci = lambda project, sha: [{"name": "test", "status": "failed", "trace": PYTEST_FAILS}]
    forge = make(gitlab)
    (job,) = (await forge.ci_status(PROJECT, SHA)).jobs

    failed = await forge.ci_failure(PROJECT, job)

    assert failed.failed_steps == ["step_script"]
    assert failed.summary == "script_failure"
    assert failed.log_tail == (
        "step_script header\n$ pytest -q\nFAILED tests/test_calc.py::test_add\n"
        "ERROR: Job failed: exit code 1"
    )
    assert gitlab.requests[-1].path == f"/api/v4/projects/group%2Fdemo/jobs/{job.id}/trace"


async def test_a_huge_trace_is_read_to_its_bounded_end(gitlab: GitLabServer) -> None:
    noise = "".join(f"line {n} of the build\n" for n in range(2 * TRACE_BYTES // 20))
    trace = section("step_script", noise + "the last words\n", end=False)
    gitlab.ci = lambda project, sha: [{"name": "build", "status": "failed", "trace": trace}]
    forge = make(gitlab)
    (job,) = (await forge.ci_status(PROJECT, SHA)).jobs

    failed = await forge.ci_failure(PROJECT, job)

    assert failed.failed_steps == []  # its start was cut off with the beginning
    assert failed.log_tail.endswith("the last words")
    assert len(failed.log_tail) <= 16_000
    assert "line 0 of" not in failed.log_tail


def test_failed_section_prefers_the_section_left_open() -> None:
    trace = section("get_sources", "ok\n") + section("build_script", "boom\n", end=False)

    assert failed_section(trace) == ("build_script", "build_script header\nboom")


def test_a_section_whose_start_was_cut_is_named_by_its_end() -> None:
    trace = f"compiling\nerror[E0308]: mismatched types\nsection_end:1:step_script\r{ESC}"
    trace += section("cleanup_file_variables", "Cleaning up\n") + "ERROR: Job failed\n"

    step, tail = failed_section(trace)

    assert step == "step_script"
    assert tail == "compiling\nerror[E0308]: mismatched types\nERROR: Job failed"


async def test_a_commit_status_has_no_log_to_read(gitlab: GitLabServer) -> None:
    gitlab.add_status(PROJECT, SHA, "jenkins", "failed")
    forge = make(gitlab)
    (job,) = (await forge.ci_status(PROJECT, SHA)).jobs
    asked = len(gitlab.requests)

    assert await forge.ci_failure(PROJECT, job) == job
    assert len(gitlab.requests) == asked


async def test_review_discussion_reads_threads_notes_and_approvals(
    gitlab: GitLabServer,
) -> None:
    pr = await open_mr(gitlab)
    project = gitlab.project(PROJECT)
    line = project.add_discussion(
        1, [("bob", "off by one"), ("alice", "agreed")], path="calc.py", line=12
    )
    project.add_discussion(1, [("carol", "naming?")], resolved=True)
    project.add_discussion(1, [("dave", "@golem please also fix docs")], individual=True)
    system = project.add_discussion(1, [("bob", "added 1 commit")], individual=True)
    system["notes"][0]["system"] = True
    project.approvals[1] = ["erin"]
    project.mrs[1]["reviewers"] = [project.user("frank"), project.user("gina")]
    project.review_states[(1, "frank")] = "requested_changes"

    discussion = await make(gitlab).review_discussion(pr)

    first, second = discussion.threads
    assert (first.id, first.path, first.line, first.resolved) == (line["id"], "calc.py", 12, False)
    assert [(n.author, n.body) for n in first.comments] == [
        ("bob", "off by one"), ("alice", "agreed"),
    ]  # fmt: skip
    assert first.comments[0].id == str(line["notes"][0]["id"])
    assert (second.path, second.resolved) == (None, True)
    assert [(c.author, c.body) for c in discussion.comments] == [
        ("dave", "@golem please also fix docs")
    ]
    assert [(r.author, r.state) for r in discussion.reviews] == [
        ("erin", "approved"),
        ("frank", "changes_requested"),
    ]  # fmt: skip  (gina has not reviewed)
    assert discussion.reviewers() == ["erin", "frank", "bob", "alice", "carol"]


async def test_reply_in_a_thread_or_on_the_merge_request(gitlab: GitLabServer) -> None:
    pr = await open_mr(gitlab)
    project = gitlab.project(PROJECT)
    thread = project.add_discussion(1, [("bob", "off by one")], path="calc.py", line=3)
    forge = make(gitlab)

    await forge.reply(pr, thread["id"], "Fixed in the new commit.")
    await forge.reply(pr, None, "Addressed every thread.")

    assert [n["body"] for n in thread["notes"]] == ["off by one", "Fixed in the new commit."]
    assert thread["notes"][1]["author"]["username"] == "golem-bot"
    assert project.discussions[1][-1]["notes"][0]["body"] == "Addressed every thread."
    with pytest.raises(ForgeNotFound):
        await forge.reply(pr, "0" * 40, "to nowhere")


async def test_request_review_sets_the_reviewers_beside_the_ones_it_had(
    gitlab: GitLabServer,
) -> None:
    pr = await open_mr(gitlab)
    bob, carol = gitlab.add_user("bob"), gitlab.add_user("carol")
    gitlab.project(PROJECT).mrs[1]["reviewers"] = [bob]
    forge = make(gitlab)

    await forge.request_review(pr, ["carol", "bob"])

    assert [r["username"] for r in gitlab.merge_requests(PROJECT)[0]["reviewers"]] == [
        "bob", "carol",
    ]  # fmt: skip
    assert gitlab.requests[-1].json == {"reviewer_ids": [bob["id"], carol["id"]]}
    with pytest.raises(ForgeNotFound, match="no user 'nobody'"):
        await forge.request_review(pr, ["nobody"])


async def test_permission_maps_access_levels(gitlab: GitLabServer) -> None:
    for name, level in (("olga", 50), ("max", 40), ("dev", 30), ("rep", 20), ("guest", 10)):
        gitlab.add_member(PROJECT, name, level)
    outsider = gitlab.add_user("outsider")
    forge = make(gitlab)

    found = {name: await forge.permission(PROJECT, name) for name in
             ("olga", "max", "dev", "rep", "guest", "outsider", "ghost")}  # fmt: skip

    assert found == {
        "olga": "admin", "max": "admin", "dev": "write", "rep": "read", "guest": "read",
        "outsider": "none", "ghost": "none",
    }  # fmt: skip
    dev_id = gitlab.add_user("dev")["id"]
    assert await forge.permission(PROJECT, str(dev_id)) == "write"
    assert await forge.permission(PROJECT, str(outsider["id"])) == "none"
    assert gitlab.requests[-1].path == f"/api/v4/projects/group%2Fdemo/members/all/{outsider['id']}"


async def test_a_log_that_goes_on_is_read_only_so_far(gitlab: GitLabServer) -> None:
    trace = "".join(f"{n:09d}\n" for n in range(10_000))  # 100,000 bytes
    gitlab.ci = lambda project, sha: [{"name": "build", "status": "failed", "trace": trace}]
    forge = make(gitlab)
    (job,) = (await forge.ci_status(PROJECT, SHA)).jobs
    path = f"/projects/group%2Fdemo/jobs/{job.id}/trace"

    cut = await forge.api.tail(path, "a log", limit=30, max_read=20_000)
    whole = await forge.api.tail(path, "a log", limit=30)

    assert not cut.complete
    assert len(cut.tail) == 30
    assert cut.tail in trace.encode()[20_000 - 30 :]  # where reading stopped, past max_read
    assert cut.tail != whole.tail
    assert whole == (b"000009997\n000009998\n000009999\n", True)
