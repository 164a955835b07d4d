"""schemathesis against the server's own OpenAPI document, over loopback: generated requests
to every operation (with a user key, so the policy answers too) find no 500 and no answer
that breaks the document (status, content type, body schema)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks

from tests.service.served import Served, serving

pytestmark = pytest.mark.bwrap

EXAMPLES_PER_OPERATION = 25
NOT_CHECKED = [checks.positive_data_acceptance]
"""A schema-valid request may still be refused with 422: a workdir outside /workspace, an
environment variable name with '=', are rules JSON Schema does not carry."""
SMALL = """
[server]
max_sessions = 3
max_runs = 1
max_queued = 5
[server.policies.user]
max_sessions = 2
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    state = tmp_path_factory.mktemp("openapi") / "state"
    secret = {  # unsigned deliveries, or without the token: 401
        "GOLEM_GITHUB_WEBHOOK_SECRET": "fuzz-secret",
        "GOLEM_GITLAB_WEBHOOK_SECRET": "fuzz-secret",
        "GOLEM_SLACK_SIGNING_SECRET": "fuzz-secret",
        "GOLEM_SLACK_BOT_TOKEN": "xoxb-fuzz-token",
        "GOLEM_LINEAR_WEBHOOK_SECRET": "fuzz-secret",
    }
    with serving(state, config=SMALL, env=secret) as server:
        yield server


@pytest.fixture(scope="module")
def user_key(served: Served) -> str:
    return served.key("fuzz")


def _operations(served: Served) -> list[Any]:
    with served.client() as client:
        document = client.get("/openapi.json").json()
    schema = schemathesis.openapi.from_dict(document)
    return [result.ok() for result in schema.get_all_operations()]


def _fuzz(operation: Any, served: Served, key: str) -> None:
    """Generated requests to one operation; the first that breaks the document raises."""
    headers = {"Authorization": f"Bearer {key}"}

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: Any) -> None:
        case.call_and_validate(
            base_url=served.url, headers=headers, timeout=120, excluded_checks=NOT_CHECKED
        )

    check()


def test_generated_requests_get_documented_answers(served: Served, user_key: str) -> None:
    # schemathesis's pytest plugin does not work with pytest 9; hypothesis drives it here
    operations = _operations(served)
    assert len(operations) > 20
    failures: dict[str, str] = {}
    for operation in operations:
        try:
            _fuzz(operation, served, user_key)
        except Exception as exc:  # every operation is tried; all failures are reported
            failures[operation.label] = str(exc)[:2000]
    assert failures == {}


def test_the_document_names_every_route_and_its_errors(served: Served) -> None:
    with served.client() as client:
        document = client.get("/openapi.json").json()
    paths = document["paths"]
    assert "/v1/sessions/{session_id}/exec" in paths
    assert "/v1/runs/{run_id}/events" in paths
    submit = paths["/v1/runs"]["post"]["responses"]
    assert {"202", "401", "403", "422", "429"} <= set(submit)
    assert "application/problem+json" in submit["429"]["content"]
