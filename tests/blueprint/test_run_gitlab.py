"""`golem run` from a GitLab issue to a GitLab merge request, against a loopback server that
speaks GitLab's REST API v4 and a git server that wants GitLab's ``oauth2`` token: the
issue and its notes feed the agent, the merge request and the note come back, and the
token goes nowhere but the API and GitLab's git."""

from __future__ import annotations

import pytest

from golem.blueprint import Runner, RunRequest
from golem.blueprint.book import RunBook
from golem.core import GolemConfig
from golem.sandbox import Engine
from golem.store import MemoryStore
from golem.testing.git_http_server import GitHttpServer
from golem.testing.gitlab_server import GitLabServer
from tests.blueprint.gitlab_runs import (  # noqa: F401 - its fixtures
    PROJECT,
    TOKEN,
    config,
    gitlab,
    head,
    served,
)
from tests.blueprint.repos import EXAMPLES, branch_commits

pytestmark = pytest.mark.bwrap


async def test_a_gitlab_issue_becomes_a_merge_request_and_a_note(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    gitlab: GitLabServer,  # noqa: F811 - fixtures, imported above
    served: GitHttpServer,  # noqa: F811 - fixtures, imported above
) -> None:
    book = RunBook(MemoryStore())
    runner = Runner(config, engine=engine, store=book.store)
    model = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
    url = served.url_for("group/calculator.git")
    remote = served.root / "group" / "calculator.git"
    gitlab.head_sha = lambda project, branch: head(remote, branch)
    request = RunRequest(repo=url, issue=f"{PROJECT}#7", model=model, forge="gitlab")

    state = await runner.start(request)

    assert state.status == "succeeded", state.error
    assert "test_calculator.py shows it too" in state.task_text  # the notes came along
    [mr] = gitlab.merge_requests(PROJECT)
    assert (mr["source_branch"], mr["target_branch"], mr["draft"]) == (state.branch, "main", False)
    assert "Closes #7" in mr["description"]
    note = gitlab.project(PROJECT).issue_notes[7][-1]
    assert note["body"].startswith(f"golem opened {mr['web_url']}")
    assert state.pr is not None
    assert (state.pr.provider, state.pr.url) == ("gitlab", mr["web_url"])
    assert state.pr.head_commit == head(remote, state.branch)
    assert branch_commits(remote, state.branch)  # pushed over HTTP with the token
    assert {r.authorization for r in served.requests} == {served.expected_authorization()}
    assert all(r.headers.get("private-token") == TOKEN for r in gitlab.requests)
    leaks = {
        "mr": mr["description"] + mr["title"],
        "commit": "\n".join(branch_commits(remote, state.branch)),
        "events": "".join(e.model_dump_json() for _, e in await book.events(state.id)),
        "state": (await book.load(state.id)).model_dump_json(),  # type: ignore[union-attr]
    }
    assert [name for name, text in leaks.items() if TOKEN in text] == []
