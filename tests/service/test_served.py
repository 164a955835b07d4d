"""The shared servers keep tests apart (tests/service/served.py): a module sharing a server
stops, when it ends, what the tenants it made left going, and nothing of anyone else's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.blueprint.repos import make_remote
from tests.service.api_runs import SLOW, agent_working, follow, submit
from tests.service.served import Served

pytestmark = pytest.mark.bwrap


def test_tidying_stops_the_runs_and_sessions_of_the_tenants_made_since_and_no_others(
    served: Served, reachable_dir: Path
) -> None:
    earlier = served.tenant_key("earlier")
    with served.client(earlier) as theirs:
        kept = theirs.post("/v1/sessions", json={}).json()["id"]
    since = len(served.keys_made)
    with served.client(served.tenant_key("left", "trusted")) as client:
        assert client.post("/v1/sessions", json={}).status_code == 201
        run_id = submit(client, make_remote(reachable_dir), model=f"scripted:{SLOW}").json()["id"]
        follow(client, run_id, until=agent_working)
        served.tidy(since)
        assert client.get("/v1/sessions").json() == []
        assert follow(client, run_id)[-1][1]["status"] == "cancelled"
    with served.client(earlier) as theirs:
        assert [session["id"] for session in theirs.get("/v1/sessions").json()] == [kept]
        assert theirs.delete(f"/v1/sessions/{kept}").status_code == 204
