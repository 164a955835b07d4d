"""Keys and tenants against a real server on loopback: no key, a wrong or revoked key (401),
another tenant's sessions, runs and pull requests (404), admin-only routes (403)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.service.served import Served

pytestmark = pytest.mark.bwrap


def test_no_key_and_a_wrong_key_are_401_with_a_challenge(served: Served) -> None:
    with served.client() as anonymous:
        missing = anonymous.get("/v1/sessions")
    with served.client("golem_nope_nope") as wrong:
        bad = wrong.get("/v1/runs")
    with served.client(served.admin_key + "x") as almost:
        near = almost.get("/v1/runs")
    for answer in (missing, bad, near):
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith("Bearer")
        assert answer.headers["content-type"] == "application/problem+json"
    assert "Authorization: Bearer" in missing.json()["detail"]
    assert "not valid" in bad.json()["detail"]


def test_a_revoked_key_is_401_from_then_on(served: Served) -> None:
    key = served.tenant_key("acme")
    with served.client(key) as acme:
        assert acme.get("/v1/sessions").status_code == 200
        key_id = key.split("_")[1]
        with served.admin() as admin:
            assert admin.delete(f"/v1/keys/{key_id}").status_code == 204
            listed = {k["id"]: k for k in admin.get("/v1/keys").json()}
        assert listed[key_id]["revoked"] is True
        assert "key" not in listed[key_id]
        assert "hash" not in listed[key_id]
        assert acme.get("/v1/sessions").status_code == 401


def test_only_an_admin_key_manages_keys(served: Served) -> None:
    with served.client(served.tenant_key("acme", "trusted")) as trusted:
        refused = trusted.post("/v1/keys", json={"tenant": "acme", "role": "admin"})
        assert refused.status_code == 403
        assert "admin" in refused.json()["detail"]
        assert trusted.get("/v1/keys").status_code == 403


def test_keys_are_stored_only_as_hashes(served: Served) -> None:
    key = served.tenant_key("acme")
    secret = key.split("_", 2)[2]
    database = (served.state_dir / "golem.db").read_bytes()
    wal = served.state_dir / "golem.db-wal"
    stored = database + (wal.read_bytes() if wal.exists() else b"")
    assert secret.encode() not in stored
    assert key.split("_")[1].encode() in stored  # its id is kept, to find its hash


def test_another_tenants_session_is_404_for_every_verb(served: Served) -> None:
    with (
        served.client(served.tenant_key("acme")) as acme,
        served.client(served.tenant_key("other")) as other,
    ):
        session = acme.post("/v1/sessions", json={}).json()["id"]
        try:
            path = f"/v1/sessions/{session}"
            answers = [
                other.get(path),
                other.post(f"{path}/exec", json={"cmd": "id"}),
                other.post(f"{path}/exec/stream", json={"cmd": "id"}),
                other.put(f"{path}/files", params={"path": "x"}, content=b"x"),
                other.get(f"{path}/files", params={"path": "/etc/hostname"}),
                other.get(f"{path}/processes"),
                other.get(f"{path}/network"),
                other.delete(path),
            ]
            assert [a.status_code for a in answers] == [404] * len(answers)
            assert all(session in a.json()["detail"] for a in answers)
            assert other.get("/v1/sessions").json() == []
            assert [s["id"] for s in acme.get("/v1/sessions").json()] == [session]
            assert acme.post(f"{path}/exec", json={"cmd": "true"}).json()["exit_code"] == 0
        finally:
            assert acme.delete(f"/v1/sessions/{session}").status_code == 204


def test_another_tenants_run_and_pull_requests_are_404(served: Served, tmp_path: Path) -> None:
    with (
        served.client(served.tenant_key("acme", "trusted")) as acme,
        served.client(served.tenant_key("other")) as other,
    ):
        submitted = acme.post(
            "/v1/runs",
            json={
                "repo": "https://example.invalid/repo.git",
                "task": "t",
                "model": "scripted:none",
            },
        )
        assert submitted.status_code == 202, submitted.text
        run_id = submitted.json()["id"]
        for answer in (
            other.get(f"/v1/runs/{run_id}"),
            other.get(f"/v1/runs/{run_id}/events"),
            other.post(f"/v1/runs/{run_id}/cancel"),
            other.post(f"/v1/runs/{run_id}/gate", json={"decision": "approved"}),
        ):
            assert answer.status_code == 404, answer.text
        assert other.get("/v1/runs").json() == []
        assert other.get("/v1/prs").json() == []
        assert [r["id"] for r in acme.get("/v1/runs").json()] == [run_id]
