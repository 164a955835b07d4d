"""CI logs, attacked: golem downloads a failed GitHub Actions job's log from wherever the API
redirects it (a pre-signed URL on another origin), so that origin, and any it redirects
to, must never see the forge token; and a log that never ends must not hold the run.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from golem.forge.rest import MAX_DOWNLOAD
from golem.testing.github_ci_server import LogHost
from golem.testing.github_server import GitHubServer, Reply
from tests.forge.github_kit import REPO, TOKEN, TOKEN_ENV, make

SHA = "d" * 40
FAILING = [("Run tests", "failure")]


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubServer]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with GitHubServer(token=TOKEN) as server:
        yield server


async def test_a_log_host_that_redirects_elsewhere_never_gets_the_token(
    github: GitHubServer,
) -> None:
    github.set_checks(REPO, SHA, [{"name": "test", "conclusion": "failure", "steps": FAILING,
                                   "log": "decoy"}])  # fmt: skip
    with LogHost() as elsewhere:
        real = elsewhere.publish("real", "##[error]the real failure\n")
        github.logs.push(Reply(status=302, headers={"location": real}))
        forge = make(github)
        job = (await forge.ci_status(REPO, SHA)).jobs[0]

        failed = await forge.ci_failure(REPO, job)

        assert failed.log_tail == "##[error]the real failure"
        carried = [*github.logs.requests, *elsewhere.requests]
    assert len(carried) == 2
    for request in carried:
        assert "authorization" not in request.headers
        assert all(TOKEN not in value for value in request.headers.values())
        assert TOKEN not in request.path


async def test_a_log_that_never_ends_is_read_only_up_to_the_cap(github: GitHubServer) -> None:
    github.set_checks(REPO, SHA, [{"name": "test", "conclusion": "failure", "steps": FAILING,
                                   "log": "decoy"}])  # fmt: skip
    chunk = b"##[error]again and again\n" * 40_000  # 1 MB, sent as often as asked
    sent = MAX_DOWNLOAD // len(chunk) + 2
    github.logs.push(Reply.stream([chunk] * sent, hold_after=sent))  # then never ends
    forge = make(github)
    job = (await forge.ci_status(REPO, SHA)).jobs[0]

    failed = await forge.ci_failure(REPO, job)

    assert failed.failed_steps == ["Run tests"]
    assert failed.log_tail.startswith("(the log is longer than golem reads; it stopped here)")
    assert failed.log_tail.endswith("##[error]again and again")
    assert len(failed.log_tail) < 6100
