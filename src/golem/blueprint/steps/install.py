"""The ``install`` step: the repository's dependencies, ready for the run's box.

Before the run's box exists, the install keys are computed (``golem.blueprint.dependencies``)
from the files the install could read at the checkout's commit, and from whether that
commit is on the base branch as the host fetched it. A cached archive of the base
branch's key, or of the run's own, is used as it is. Otherwise an install box (the run's
box, but on the filtered network reaching the ecosystems' registries and the engine's
egress allow list, with no secrets and no brokered credential, and an idle timeout so a
stalled registry fails instead of hanging) gets the checkout, runs the install commands,
and hands back the ``cache`` paths as one archive, which ``golem.sandbox.keep`` checks and
keeps: under the base branch's key only when the checkout is a commit of the base branch,
else under its commit's own key (a follow-up on a pull request's head never writes what
the base branch's runs read). The run's box unpacks it (``Execution.box``). No agent has
run yet; the install box is removed whatever happens.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Literal

from golem.blueprint.dependencies import (
    DependencyCache,
    InstallKeyParts,
    InstallKeys,
    archive_names,
    checkout_of,
    image_of,
    install_keys,
    kept_paths,
    read_inputs,
)
from golem.blueprint.execution import Execution
from golem.blueprint.steps.dropping import fatal_failure, partial_key, run_installs
from golem.blueprint.workspace import copy_into_box
from golem.checks import CheckResult, RepoConventions, known_registries
from golem.core.errors import ConfigError, UnsafeBoxOutput
from golem.core.hostnames import host_name_patterns
from golem.core.network import EgressPolicy
from golem.core.sizes import format_size
from golem.core.spec import BoxSpec
from golem.forge import markdown
from golem.sandbox.keep import KeptArchive, keep_archive
from golem.sandbox.takeback import TakebackLimits

__all__ = ["run_install"]

Result = tuple[Literal["success", "failure"], str]


async def run_install(ex: Execution, node: str) -> Result:
    """Make the run's dependencies ready: from the cache, or by installing them."""
    ex.state.prepared = [r for r in ex.state.prepared if r.name != "install"]  # a resumed run
    ex.state.dropped = []
    conventions = ex.state.conventions
    if conventions is None or not conventions.install:
        return "success", "nothing to install"
    settings = ex.config.dependencies
    if not settings.enabled:  # the commands run in the run's own box, every run
        results = await run_installs(ex, node, timeout=settings.timeout)
        return _recorded(ex, results)
    try:
        paths = kept_paths(conventions)
        spec = install_spec(ex, conventions, node)
        keys = await asyncio.to_thread(_keys, ex, conventions, spec, paths)
    except ConfigError as exc:
        return _failed(ex, exc.message)
    cache = DependencyCache(ex.config)
    for key in keys.read:
        if cache.take(key):
            ex.state.dependencies, ex.state.dependencies_cached = key, True
            ex.note(f"dependencies: {key[:12]} from the cache ({', '.join(paths)})", node)
            ex.save()
            await ex.dependencies_ready()
            return "success", f"cached {key[:12]}"
    return await _install(ex, node, spec, keys, paths)


def install_spec(ex: Execution, conventions: RepoConventions, node: str) -> BoxSpec:
    """The install box: the run's box on the install's network, reaching the registries
    (the repository's and the configured ones) besides what the engine's egress allows,
    with no brokered credential (the install runs the repository's code online)."""
    settings = ex.config.dependencies
    base = ex.box_spec(install=True)
    egress = EgressPolicy(
        allow=[
            *base.egress.allow,
            *host_name_patterns(repository_hosts(ex, conventions, node)),
            *settings.registries,
        ],
        deny=base.egress.deny,
        allow_cidrs=base.egress.allow_cidrs,
        ports=base.egress.ports,
    )
    return ex.engine.spec(
        base,
        network=settings.network,
        egress=egress,
        idle_timeout=settings.idle_timeout,
        credentials=False,
        labels={**base.labels, "golem.step": "install"},
    )


def repository_hosts(ex: Execution, conventions: RepoConventions, node: str) -> list[str]:
    """The hosts the repository names that its install may reach: all of them, or with
    ``repository_registries`` off only those golem knows for its ecosystems (a note says
    which were ignored)."""
    if ex.config.dependencies.repository_registries:
        return conventions.registries
    known = set(known_registries(conventions.ecosystems))
    ignored = [host for host in conventions.registries if host not in known]
    if ignored:
        ex.note(
            f"dependencies: ignored the repository's registries {', '.join(ignored)} "
            "([dependencies] repository_registries is false: add a host the install needs "
            "to golem.toml's [dependencies] registries)",
            node,
        )
    return [host for host in conventions.registries if host in known]


def _keys(
    ex: Execution, conventions: RepoConventions, spec: BoxSpec, paths: list[str]
) -> InstallKeys:
    """The install keys of this run (git and file reads: on a worker thread)."""
    parts = InstallKeyParts(
        tenant=ex.book.store.tenant or "",
        repo=ex.state.request.repo,
        image=image_of(spec, ex.config),
        commands=conventions.install,
        env=spec.env,
        cache=paths,
        inputs=read_inputs(ex.workspace, conventions.install, conventions.cache_keys),
    )
    return install_keys(parts, checkout_of(ex.workspace, ex.state.base))


async def _install(
    ex: Execution, node: str, spec: BoxSpec, keys: InstallKeys, paths: list[str]
) -> Result:
    """Install in an install box and keep what it made, then note it."""
    if ex.state.commit is not None or not await ex.repo().is_clean():
        return _failed(
            ex,
            "the dependency install runs on the checkout as fetched only, before any step "
            "changed it (what it makes is kept for later runs of the repository); put the "
            "install node before the agent's steps in the blueprint",
        )
    key = keys.write
    try:
        kept, key = await _install_in_box(ex, node, spec, key, paths)
    except UnsafeBoxOutput as exc:
        fix = (
            "; raise the box's max_file_bytes or max_takeback_bytes (engine.defaults, or the "
            "blueprint's box) and [dependencies] max_bytes, or keep fewer paths"
            if exc.rule == "takeback.size"
            else ""
        )
        return _failed(
            ex, f"golem did not keep what the dependency install made: {exc.message}{fix}"
        )
    if kept is None:
        return "failure", ex.state.error or "the dependency install failed"
    ex.state.dependencies, ex.state.dependencies_cached = key, False
    evicted = DependencyCache(ex.config).evict(keep=key)
    ex.note(_kept_note(ex, keys, key, kept, paths, evicted), node)
    ex.save()
    await ex.dependencies_ready()
    return "success", f"installed {key[:12]}"


def _kept_note(
    ex: Execution,
    keys: InstallKeys,
    key: str,
    kept: KeptArchive,
    paths: list[str],
    evicted: list[str],
) -> str:
    """What the install kept (under ``key``), and for whom."""
    names = zip(paths, archive_names(paths), strict=True)
    missing = sorted(path for path, name in names if name not in kept.found)
    return (
        f"dependencies: {key[:12]} installed and kept ({format_size(kept.size)}, "
        f"{kept.entries} entries)"
        + (f"; the install made no {', '.join(missing)}" if missing else "")
        + (f"; {len(evicted)} older archive(s) removed from the cache" if evicted else "")
        + (
            ""
            if keys.shared
            else f"; kept for this commit only (not a commit of {ex.state.base} as fetched: "
            "the base branch's runs never read it)"
        )
    )


async def _install_in_box(
    ex: Execution, node: str, spec: BoxSpec, key: str, paths: list[str]
) -> tuple[KeptArchive | None, str]:
    """The install box: the checkout in, the install commands run, the cache paths kept
    as the archive of ``key`` (``partial_key``: of its own when checks were dropped); None
    when a command failed. The box is removed in all cases."""
    settings = ex.config.dependencies
    held = TakebackLimits.of(spec)  # within what the box could hold
    limits = dataclasses.replace(held, max_bytes=min(held.max_bytes, settings.max_bytes))
    reached = spec.egress.allow if spec.network == "filtered" else None
    box = await ex.engine.create_session(spec)
    try:
        ex.box_started(box, "install")
        await copy_into_box(box, ex.workspace)
        results = await run_installs(ex, node, timeout=settings.timeout, box=box)
        if _recorded(ex, results, registries=reached)[0] == "failure":
            return None, key
        key = partial_key(ex, key)
        names = archive_names(paths)  # the checkout's and golem's home's, from the root
        chunks = box.stream_archive("/", paths=names)
        archive = DependencyCache(ex.config).path(key)
        return await keep_archive(chunks, archive, limits, within=names), key
    finally:
        await ex.engine.remove_session(box.id)


def _recorded(
    ex: Execution, results: list[CheckResult], registries: Sequence[str] | None = None
) -> Result:
    """Keep the install commands' results; a failure says what failed and what to do."""
    ex.state.prepared.extend(results)
    failed = fatal_failure(ex, results)
    if failed is None:
        ex.save()
        return "success", f"{len(results)} install command(s) passed"
    how = failed.reason or ("timed out" if failed.timed_out else f"exit {failed.exit_code}")
    reach = (
        f"it could reach {', '.join(registries) or 'no host'} (the registries and the "
        "engine's egress allow list): allow a registry it needs in [dependencies] registries, "
        "or fix the command in .golem.toml's [commands] install"
        if registries is not None
        else "fix the command in .golem.toml's [commands] install"
    )
    return _failed(
        ex, f"the dependency install {markdown.code(failed.command)} failed ({how}); {reach}"
    )


def _failed(ex: Execution, message: str) -> Result:
    ex.state.dependencies = None
    ex.state.error = message
    ex.save()
    return "failure", message
