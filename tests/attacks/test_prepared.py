"""Attacks on prepared repositories (docs/snapshots.md#prepared-repositories): a prepare
box that planted a `.git` (any spelling, hooks and all) or a setuid file keeps nothing and
leaves the snapshot before as it was; tracked files, links and files it changed or planted
in the prepared tree never reach a run's pull request; one tenant's prepared snapshot never
serves another's runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.core import GolemConfig
from golem.forge import LocalForge
from golem.sandbox import Engine
from golem.store import Store
from tests.blueprint import prepared_runs
from tests.blueprint.install_runs import python_repo, run
from tests.blueprint.prepared_runs import conventions_of, files_of, prepare, record_of, warming
from tests.blueprint.registries import LocalRegistries
from tests.blueprint.repos import git

pytestmark = pytest.mark.bwrap

registries, config, store = prepared_runs.registries, prepared_runs.config, prepared_runs.store


@pytest.mark.parametrize(
    "planted",
    [
        "mkdir -p deep/.git/hooks && echo '#!/bin/sh' > deep/.git/hooks/pre-commit",
        "mkdir -p sub && mkdir sub/.GIT",
        "cp /bin/true /tmp/golem/suid && chmod 4755 /tmp/golem/suid",
    ],
    ids=["a-git-directory-with-hooks", "a-git-of-another-spelling", "a-setuid-file"],
)
async def test_a_prepare_box_that_planted_a_git_or_setuid_file_keeps_nothing(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
    planted: str,
) -> None:
    remote = python_repo(reachable_dir)
    good = await prepare(config, engine, store, remote, conventions_of(registries))
    assert good.status == "succeeded", good.error
    before = record_of(config, "default")
    assert before is not None

    bad = await prepare(warming(config, planted), engine, store, remote, conventions_of(registries))
    assert bad.status == "failed"
    assert bad.error is not None
    assert "not kept" in bad.error
    assert record_of(config, "default") == before
    assert [s.name for s in engine.snapshots.all()] == [before.name]  # type: ignore[attr-defined]
    hooks = Path(bad.workspace) / ".git" / "hooks"
    assert not (hooks / "pre-commit").exists()


async def test_tracked_files_and_links_a_prepare_box_changed_never_reach_a_run(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    tamper = (
        "echo 'BACKDOOR = 1' >> calculator.py && echo planted > planted.txt "
        "&& ln -s /etc/passwd README.md.link && rm AGENTS.md && ln -s /etc/passwd AGENTS.md "
        "&& printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit "
        "&& chmod +x .git/hooks/pre-commit && git config core.hooksPath /tmp/golem/hooks"
    )
    conventions = conventions_of(registries)
    prepared = await prepare(warming(config, tamper), engine, store, remote, conventions)
    assert prepared.status == "succeeded", prepared.error

    state = await run(config, engine, store, remote, conventions)
    assert state.status == "succeeded", state.error
    assert state.started_from is not None
    [pr] = await LocalForge(store).pull_requests()
    assert "BACKDOOR" not in pr.diff
    assert files_of(pr.diff) == ["calculator.py"]
    for checkout in (prepared.workspace, state.workspace):
        hooks = Path(checkout) / ".git" / "hooks"
        assert [h.name for h in hooks.iterdir() if not h.name.endswith(".sample")] == []
        assert "hooksPath" not in (Path(checkout) / ".git" / "config").read_text()
    shipped = git("show", "--stat", "--format=", state.branch, cwd=remote)
    assert "planted" not in shipped
    assert "AGENTS.md" not in shipped


async def test_one_tenants_prepared_snapshot_never_serves_another(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    conventions = conventions_of(registries)
    ours = store.for_tenant("ours")
    prepared = await prepare(config, engine, ours, remote, conventions)
    assert prepared.status == "succeeded", prepared.error
    assert record_of(config, "ours") is not None

    theirs = await run(config, engine, store.for_tenant("theirs"), remote, conventions)
    assert theirs.status == "succeeded", theirs.error
    assert theirs.started_from is None
    again = await run(config, engine, ours, remote, conventions)
    assert again.started_from is not None
