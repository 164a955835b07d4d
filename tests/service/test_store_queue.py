"""The run queue in the store, on SQLite and PostgreSQL: claims are fair across tenants and
never take one run twice; runs of a dead server go back in the queue; a queued run can be
cancelled before it starts."""

from __future__ import annotations

from golem.service.store import SqlStore
from tests.service.runs import at_once, new_run


def test_the_tenant_with_fewer_runs_in_progress_goes_first(db_url: str) -> None:
    everyone = SqlStore(db_url, tenant=None)
    busy, quiet = everyone.for_tenant("busy"), everyone.for_tenant("quiet")
    for number in range(3):
        busy.create_run(new_run(f"run-busy-{number}", created=100.0 + number))
    quiet.create_run(new_run("run-quiet", created=200.0))

    first = everyone.claim_next_run("host:1")
    second = everyone.claim_next_run("host:1")
    third = everyone.claim_next_run("host:1")
    assert [r.id for r in (first, second, third) if r] == ["run-busy-0", "run-quiet", "run-busy-1"]
    assert first is not None
    assert first.status == "running"
    assert first.owner_server == "host:1"
    assert everyone.count_runs("running") == 3
    assert busy.count_runs("queued") == 1
    assert quiet.count_runs("queued") == 0
    everyone.close()


def test_servers_claiming_at_once_never_take_a_run_twice(store: SqlStore) -> None:
    for number in range(12):
        store.create_run(new_run(f"run-{number:02d}", created=float(number)))

    def claim(server: int) -> list[str]:
        own = SqlStore(store.url, tenant=None)
        taken = []
        try:
            while (run := own.claim_next_run(f"host:{server}")) is not None:
                taken.append(run.id)
        finally:
            own.close()
        return taken

    claimed = [run_id for server in at_once(4, claim) for run_id in server]
    assert sorted(claimed) == [f"run-{number:02d}" for number in range(12)]
    assert store.claim_next_run("host:9") is None


def test_a_run_in_progress_is_requeued_without_its_owner(store: SqlStore) -> None:
    store.create_run(new_run("run-1"))
    claimed = store.claim_next_run("host:1")
    assert claimed is not None
    assert [r.id for r in store.list_active_runs()] == ["run-1"]

    assert store.requeue_run("run-1") is True
    again = store.load_run("run-1")
    assert again is not None
    assert (again.status, again.owner_server, again.owner_pid) == ("queued", None, None)
    assert store.requeue_run("run-1") is False  # queued, not in progress
    assert store.list_active_runs() == []
    reclaimed = store.claim_next_run("host:2")
    assert reclaimed is not None
    assert reclaimed.owner_server == "host:2"


def test_a_queued_run_is_cancelled_before_it_starts_and_never_claimed(store: SqlStore) -> None:
    store.create_run(new_run("run-1"))
    cancelled = store.cancel_queued("run-1")
    assert cancelled is not None
    assert (cancelled.status, cancelled.cancel_requested) == ("cancelled", True)
    assert store.claim_next_run("host:1") is None
    assert store.cancel_queued("run-1") is None  # no longer queued


def test_another_tenant_cannot_cancel_or_requeue_a_run(db_url: str) -> None:
    acme, other = SqlStore(db_url, tenant="acme"), SqlStore(db_url, tenant="other")
    acme.create_run(new_run("run-1"))
    assert other.cancel_queued("run-1") is None
    assert acme.claim_next_run("host:1") is not None
    assert other.requeue_run("run-1") is False
    loaded = acme.load_run("run-1")
    assert loaded is not None
    assert loaded.status == "running"
    acme.close()
    other.close()
