"""Every trigger's runs obey ``server.trust.sources``: one real `golem serve` with every
trigger at once (GitHub, GitLab, Slack, Linear against their loopback servers, an
automation, a goal loop), each source's rule a tier stronger than the default, and the run
each trigger starts is queued in that tier.
The runs wait at a gate and are cancelled: no box starts. Linear's deliveries of no person
(Linear itself: a workflow automation) run as an outsider's, and say so on the issue."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from golem.core.isolation import TRIGGER_SOURCES
from golem.testing.github_server import GitHubServer
from golem.testing.gitlab_server import GitLabServer
from golem.testing.linear_server import LinearServer, Team
from golem.testing.slack_server import SlackServer
from tests.blueprint.repos import make_remote
from tests.service import github_triggers, gitlab_triggers, linear_kit, slack_kit
from tests.service.automation_kit import automation
from tests.service.github_triggers import GitHub, gated_minion, labelled
from tests.service.polling import eventually
from tests.service.served import Served, serving

pytestmark = pytest.mark.bwrap

RULES = {  # each source's least tier: stronger than the default (container), told apart
    "github": "gvisor",
    "gitlab": "microvm",
    "slack": "gvisor",
    "linear": "microvm",
    "automation": "microvm",
    "loop": "gvisor",
}
SLACK_USER = slack_kit.ALICE
DEVELOPER = 30  # GitLab's access level
ENV = {
    **github_triggers.SERVER_ENV,
    **slack_kit.SERVER_ENV,
    **linear_kit.ENV,
    "TRIGGER_TEST_GITLAB_SECRET": gitlab_triggers.SECRET,
    "TRIGGER_TEST_GITLAB_TOKEN": gitlab_triggers.TOKEN,
}


@pytest.fixture(scope="module")
def remotes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("source-remotes")
    home.chmod(0o755)
    return home


@pytest.fixture(scope="module")
def github() -> Iterator[GitHubServer]:
    with GitHub(token=github_triggers.TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def gitlab() -> Iterator[GitLabServer]:
    with GitLabServer(token=gitlab_triggers.TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def slack() -> Iterator[SlackServer]:
    with SlackServer(token=slack_kit.BOT_TOKEN) as server:
        server.add_user(SLACK_USER)
        yield server


@pytest.fixture(scope="module")
def linear() -> Iterator[LinearServer]:
    with LinearServer(token=linear_kit.TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def team(linear: LinearServer) -> Team:
    return linear.add_team("ENG")


def every_trigger(
    home: Path,
    remotes: Path,
    servers: tuple[GitHubServer, GitLabServer, SlackServer, LinearServer],
) -> str:
    """golem.toml of a server with every trigger, each source's rule ``RULES``'."""
    github, gitlab, slack, linear = servers
    gated = gated_minion(home)
    repo = make_remote(remotes, "plain")
    sources = ", ".join(f'{source} = "{tier}"' for source, tier in RULES.items())
    return f"""
[server]
max_runs = 16

[engine.tiers.gvisor]
type = "process"

[engine.tiers.microvm]
type = "process"

[server.trust]
sources = {{ {sources} }}

[forge.github]
api_url = "{github.api_url}"
token_env = "TRIGGER_TEST_GITHUB_TOKEN"

[forge.gitlab]
base_url = "{gitlab.base_url}"
token_env = "TRIGGER_TEST_GITLAB_TOKEN"

[server.github]
tenant = "from-github"
secret_env = "TRIGGER_TEST_WEBHOOK_SECRET"
label = "golem"
blueprint = "{gated}"
repo_url = "{remotes}/{{repo}}.git"

[server.gitlab]
tenant = "from-gitlab"
secret_env = "TRIGGER_TEST_GITLAB_SECRET"
label = "golem"
blueprint = "{gated}"
repo_url = "{remotes}/{{repo}}.git"

[server.slack]
team = "{slack_kit.TEAM}"
api_url = "{slack.api_url}"
signing_secret_env = "SLACK_TEST_SIGNING_SECRET"
token_env = "SLACK_TEST_BOT_TOKEN"
blueprint = "{gated}"
update_interval = 0

[server.slack.users]
{SLACK_USER} = {{ tenant = "from-slack", role = "trusted" }}

[server.slack.repos]
plain = "{repo}"

[server.slack.channels]
{slack_kit.CHANNEL} = "plain"

[server.linear]
tenant = "from-linear"
secret_env = "LINEAR_TEST_SECRET"
token_env = "LINEAR_TEST_TOKEN"
api_url = "{linear.graphql_url}"
blueprint = "{gated}"
update_interval = 0
teams = {{ ENG = "{repo}" }}

{automation("by-hand", "from-automation", repo, gated, cron="0 0 29 2 1", task="Chores")}
"""


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
    remotes: Path,
    github: GitHubServer,
    gitlab: GitLabServer,
    slack: SlackServer,
    linear: LinearServer,
) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("sources")
    config = every_trigger(home, remotes, (github, gitlab, slack, linear))
    with serving(home / "state", config=config, env=ENV) as server:
        yield server


def queued(served: Served, tenant: str, run_id: str) -> dict[str, Any]:
    """The run as the API shows it to its tenant; cancelled (its tier was set as it was
    queued: nothing more of it is needed)."""
    with served.client(served.key(tenant, "trusted")) as client:
        run: dict[str, Any] = client.get(f"/v1/runs/{run_id}").raise_for_status().json()
        client.post(f"/v1/runs/{run_id}/cancel")
    return run


def assert_in_its_sources_tier(served: Served, tenant: str, run_id: str, source: str) -> None:
    assert queued(served, tenant, run_id)["tier"] == RULES[source]


def test_the_rules_name_every_trigger_source() -> None:
    assert set(RULES) == set(TRIGGER_SOURCES)  # a new trigger is tested here too


def test_a_github_label_starts_its_run_in_the_github_sources_tier(
    served: Served, github: GitHubServer, remotes: Path
) -> None:
    make_remote(remotes / "octo", "labelled")
    github.add_issue("octo/labelled", 1, "add() subtracts", body="See calculator.py.")
    answer = github_triggers.deliver(served, "issues", labelled("octo/labelled"))
    assert answer.json()["status"] == "started", answer.text
    run_id = answer.json()["run_id"]
    assert_in_its_sources_tier(served, "from-github", run_id, "github")
    said = f"golem.service.queue: run {run_id} runs in the gvisor tier"
    eventually(  # golem's own log lines reach the server's output (its standard error)
        lambda: next((line for line in served.output if said in line), None),
        "the server's log line of the run's tier",
    )


def test_a_gitlab_label_starts_its_run_in_the_gitlab_sources_tier(
    served: Served, gitlab: GitLabServer, remotes: Path
) -> None:
    make_remote(remotes / "group", "labelled")
    gitlab.add_issue("group/labelled", 1, "add() subtracts its arguments", "`add(2, 3)` is -1.")
    gitlab.add_member("group/labelled", "dev", DEVELOPER)
    hook = gitlab_triggers.labelled("group/labelled", 1, (), ("golem",))
    answer = gitlab_triggers.deliver(served, "Issue Hook", hook)
    assert answer.json()["status"] == "started", answer.text
    assert_in_its_sources_tier(served, "from-gitlab", answer.json()["run_id"], "gitlab")


def test_a_slack_mention_starts_its_run_in_the_slack_sources_tier(
    served: Served, slack: SlackServer
) -> None:
    answer, _, _ = slack_kit.mention(served, slack, "fix add()", user=SLACK_USER)
    assert answer.status_code == 200, answer.text
    run_id = eventually(
        lambda: next(
            (c.args["text"].split()[2].rstrip(":") for c in slack.calls("chat.postMessage")
             if c.args["text"].startswith("golem run ")),
            None,
        ),
        "the status message of the mention's run",
    )  # fmt: skip
    assert_in_its_sources_tier(served, "from-slack", run_id, "slack")


def test_a_linear_assignment_starts_its_run_in_the_linear_sources_tier(
    served: Served, linear: LinearServer, team: Team
) -> None:
    ada = linear.add_user("Ada Lovelace", teams=(team,))
    issue = linear.add_issue(team, "add() subtracts its arguments", "See calculator.py.", number=1)
    answer = linear_kit.deliver(served, linear_kit.assigned(linear, issue, ada))
    assert answer.json()["status"] == "started", answer.text
    assert_in_its_sources_tier(served, "from-linear", answer.json()["run_id"], "linear")


def test_a_linear_request_queued_behind_a_run_starts_in_the_linear_sources_tier(
    served: Served, linear: LinearServer, team: Team
) -> None:
    grace = linear.add_user("Grace Hopper", teams=(team,))
    issue = linear.add_issue(team, "mean() of nothing", "See calculator.py.", number=2)
    first = linear_kit.deliver(served, linear_kit.assigned(linear, issue, grace)).json()
    comment = linear_kit.payload("comment_create")
    comment["actor"]["id"] = grace
    comment["data"].update(issueId=issue["id"], userId=grace)
    waiting = linear_kit.deliver(served, comment).json()
    assert waiting["status"] == "queued", waiting
    with served.client(served.key("from-linear", "trusted")) as client:
        before = {run["id"] for run in client.get("/v1/runs").json()}
        queued(served, "from-linear", first["run_id"])  # its end starts the request kept
        later = eventually(
            lambda: next((r for r in client.get("/v1/runs").json() if r["id"] not in before), None),
            "the run of the request kept while the first ran",
        )
    assert_in_its_sources_tier(served, "from-linear", later["id"], "linear")


def test_an_automation_starts_its_run_in_the_automation_sources_tier(served: Served) -> None:
    with served.client(served.key("from-automation", "user")) as client:
        fired = client.post("/v1/automations/by-hand/run")
    assert fired.json()["status"] == "started", fired.text
    assert_in_its_sources_tier(served, "from-automation", fired.json()["run_id"], "automation")


def test_a_goal_loop_starts_its_runs_in_the_loop_sources_tier(
    served: Served, tmp_path: Path
) -> None:
    tenant_key = served.tenant_key("from-loop", "trusted")
    remote = make_remote(tmp_path)
    asked = {"repo": str(remote), "goal": "Fix add().", "until": "true", "max_iterations": 1,
             "blueprint": str(gated_minion(tmp_path))}  # fmt: skip
    with served.client(tenant_key) as client:
        started = client.post("/v1/loops", json=asked)
        assert started.status_code == 202, started.text
        loop_id = started.json()["id"]
        run_id = eventually(
            lambda: next(
                (i["run_id"] for i in client.get(f"/v1/loops/{loop_id}").json()["iterations"]),
                None,
            ),
            "the loop's first iteration",
        )
        assert client.get(f"/v1/runs/{run_id}").json()["tier"] == RULES["loop"]
        client.post(f"/v1/loops/{loop_id}/stop")
