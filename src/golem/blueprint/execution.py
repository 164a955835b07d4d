"""One run in progress: its state, its box, its events and what its budget has left.

Steps (golem.blueprint.steps) get an Execution and nothing else; the runner owns its life.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from golem.agent import Budget, Model, load_provider_early, make_model
from golem.agent.events import AgentEvent, ModelDelta
from golem.agent.messages import Usage
from golem.blueprint.book import RunBook
from golem.blueprint.container_box import ContainerBox, container_box
from golem.blueprint.dependencies import (
    INSTALL_ENV,
    OFFLINE_ENV,
    DependencyCache,
    cache_paths,
    image_of,
    in_checkout,
)
from golem.blueprint.events import AgentStep, BoxStarted, RunEvent, RunNote
from golem.blueprint.images import RunImages
from golem.blueprint.model import AgentNode, Blueprint, BoxNode
from golem.blueprint.prepared import (
    PreparedRecord,
    PreparedRepos,
    move_to_checkout,
    remove_in_box,
)
from golem.blueprint.secrets import RunSecrets
from golem.blueprint.state import PausedStep, PreparedStart, RunState
from golem.blueprint.workspace import Layout, copy_into_box, git_exclude, take_back
from golem.blueprint.writer import StoreWriter
from golem.checks import CheckResult, RepoConventions, Service, reach, start_services
from golem.core.config import GolemConfig
from golem.core.errors import (
    BudgetSpent,
    ConfigError,
    DependenciesGone,
    ForgeError,
    SandboxError,
    SnapshotNotFound,
    SnapshotUnsupported,
)
from golem.core.events import EventSink
from golem.core.isolation import TIERS, at_least
from golem.core.spec import GOLEM_HOME, MIN_TMPFS, WORKSPACE, BoxSpec
from golem.forge import Forge, ForgeCredentials, GitRepo, git_auth
from golem.sandbox import DEFAULT_TENANT, TENANT_LABEL, Box, Engine, ExecRequest
from golem.sandbox.keep import archive_part

if TYPE_CHECKING:
    from golem.context.toolshed import Toolshed

__all__ = ["Execution"]


class Execution:
    """A run being executed by this process."""

    def __init__(
        self,
        state: RunState,
        blueprint: Blueprint,
        *,
        config: GolemConfig,
        book: RunBook,
        engine: Engine,
        forge: Forge,
        credentials: ForgeCredentials | None = None,
        on_event: EventSink[RunEvent] | None = None,
    ) -> None:
        self.state = state
        self.blueprint = blueprint
        self.config = config
        self.book = book
        self.writes = StoreWriter()
        self.engine = engine
        self.forge = forge
        self.credentials = credentials or ForgeCredentials.from_config(
            config.forge, config.state_dir
        )
        names = blueprint.box.get("secrets_env") or []
        self.secrets = RunSecrets.gather(
            [os.environ.get(str(name), "") for name in names] if isinstance(names, list) else [],
            config.credentials,
            self.credentials.secrets(),
        )
        self.credentials.on_minted(self.secrets.learn)  # tokens minted mid-run are masked
        self._on_event = on_event
        self._box: Box | None = None
        self.services_up: list[Service] = []
        """The services started in the run's box (those its checks need, when it has a
        container engine)."""
        self._cold_images: tuple[RunImages, str] | None = None
        """The image cache had no entry for the run's box: its key, until the engine's
        images are kept (``keep_cold_images``) or an agent is given a model."""
        self._layout = Layout()
        self._models: dict[str, Model] = {}
        for node in blueprint.nodes:
            if isinstance(node, AgentNode):
                load_provider_early(node.model or state.request.model or config.models.default)
        self._toolshed: Toolshed | None = None
        self.start_from: PreparedRecord | None = None
        """A snapshot the box starts from instead of the repository's prepared one (a
        best-of-N attempt's: the run's box after its setup)."""
        self.paused_step: PausedStep | None = None
        """Set by an agent step that pauses (its provider down), for the runner."""

    @property
    def workspace(self) -> Path:
        """The run's checkout on the host."""
        return Path(self.state.workspace)

    @property
    def run_dir(self) -> Path:
        """Where the run keeps its checkout and trajectories."""
        return self.config.state_dir / "runs" / self.state.id

    def repo(self) -> GitRepo:
        """The run's checkout, with the run's forge token for its remote (if any) and the
        remotes it may reach."""
        forge = self.config.forge
        return GitRepo(
            self.workspace,
            auth=git_auth(forge, self.state.request.repo, self.credentials),
            timeout=forge.git_timeout,
            remote_policy=self.state.remote_policy,
            network=self.config.engine.network,
            host_credentials=self.credentials.host_git,
        )

    def emit(self, event: RunEvent) -> None:
        """Keep an event in the store (in order, see StoreWriter) and show it (the run's
        secrets masked)."""
        event, claim = self.secrets.mask_model(event), self.state.claim
        self.writes.put(lambda: self.book.append(event, claim=claim))
        if self._on_event is not None:
            self._on_event(event)

    def note(self, message: str, node: str | None = None) -> None:
        """Tell the person watching (and the store) something worth knowing."""
        self.emit(RunNote(run_id=self.state.id, node=node, message=message))

    def check_judged(self, node: str, result: CheckResult, round_: int) -> None:
        """Told of each check of a loop node's verification once it is judged (a best-of-N
        attempt stops there when it can no longer win); nothing for a run."""

    async def quietly(self, work: Awaitable[object], what: str) -> None:
        """Await a forge call whose failure is noted (``could not <what>``), never the
        run's end: a comment or a label is worth less than the pushed work."""
        try:
            await work
        except ForgeError as exc:
            self.note(f"could not {what}: {exc.message}")

    def agent_sink(self, node: str) -> EventSink[AgentEvent]:
        """Where an agent step's events go: wrapped with their node, deltas only shown."""

        def sink(event: AgentEvent) -> None:
            wrapped = AgentStep(run_id=self.state.id, node=node, event=event)
            if isinstance(event, ModelDelta):
                if self._on_event is not None:
                    self._on_event(wrapped)
                return
            self.emit(wrapped)

        return sink

    def save(self) -> None:
        """Persist the state (what an error or the agent said, masked)."""
        state = self.state
        if state.error:
            state.error = self.secrets.mask(state.error)
        state.summary = self.secrets.mask(state.summary)
        snapshot = state.model_copy(
            deep=True
        )  # as it is now, whatever changes before it is written
        self.writes.put(lambda: self.book.save(snapshot))

    # The box ----------------------------------------------------------------------------

    def box_spec(self, *, install: bool = False) -> BoxSpec:
        """The spec of the run's box: the blueprint's box settings over the engine's
        defaults, the repository's image and environment; without a network, the package
        managers' offline settings. ``install``: the base of the install box's (no secrets
        and no offline settings: it reaches the registries)."""
        overrides = dict(self.blueprint.box)
        if not install:
            overrides.update(self.container_box().overrides())
        conventions = self.state.conventions
        if conventions is not None and conventions.image:
            overrides.setdefault("image", conventions.image)
        extra = overrides.pop("env", None)
        secrets = _host_secrets(overrides.pop("secrets_env", []))
        overrides["secrets"] = {} if install else secrets  # the install runs foreign code online
        env = {**self.config.engine.defaults.env, "PYTHONDONTWRITEBYTECODE": "1"}
        env.update(INSTALL_ENV if install else {})
        env.update(conventions.env if conventions is not None else {})
        labels = {"golem.run": self.state.id, TENANT_LABEL: self.tenant}
        tier, asked = self.state.tier, overrides.get("tier")
        if tier is not None and (asked is None or (asked in TIERS and not at_least(asked, tier))):
            overrides["tier"] = tier  # the trust policy's tier: a blueprint may only raise it
        spec = self.engine.spec(overrides, env=env, labels=labels, workdir=WORKSPACE)
        if not install and spec.network == "none":
            env.update(OFFLINE_ENV)
        if isinstance(extra, dict):
            env.update({str(k): str(v) for k, v in extra.items()})
        spec = self.engine.spec(overrides, env=env, labels=labels, workdir=WORKSPACE)
        return self._with_home(spec)

    def container_box(self) -> ContainerBox:
        """Whether the run's box gets a container engine for checks that need one, and why
        (or why not)."""
        conventions = self.state.conventions
        return container_box(
            conventions.containers if conventions is not None else [],
            self.blueprint.box,
            self.config.engine,
            allowed=self.state.containers,
        )

    def _with_home(self, spec: BoxSpec) -> BoxSpec:
        """``spec`` with a quarter of its /workspace tmpfs moved to /tmp when the install
        keeps anything in golem's home there (the venv, cargo's and go's caches): the same
        budget, and so the same memory, split between the checkout and golem's files."""
        conventions = self.state.conventions
        home = f"{GOLEM_HOME}/"
        if conventions is None or spec.workspace is not None:
            return spec
        if not any(path.startswith(home) for path in conventions.cache):
            return spec
        moved = spec.workspace_size // HOME_SHARE
        if spec.workspace_size - moved < MIN_TMPFS:
            return spec
        return self.engine.spec(
            spec, workspace_size=spec.workspace_size - moved, tmp_size=spec.tmp_size + moved
        )

    @property
    def tenant(self) -> str:
        """Whose the run's boxes and snapshots are: its store's tenant (``default``)."""
        return self.book.store.tenant or DEFAULT_TENANT

    async def box(self) -> Box:
        """The run's box, started (from the run's prepared snapshot when there is one,
        with the checkout copied in, and the run's installed dependencies unpacked in it)
        when first needed."""
        if self._box is None:
            box, prepared = await self._start_box()
            try:
                self.box_started(box, "run")
                if (choice := self.container_box()).give:
                    self.note(choice.why)
                if prepared is None:
                    self._layout = await copy_into_box(box, self.workspace)
                    await self._place_dependencies(box)
                else:
                    await self._from_prepared(box, prepared)
                await self._images_and_services(box)
            except BaseException:
                await self.engine.remove_session(box.id)
                raise
            self._box = box
        return self._box

    async def _images_and_services(self, box: Box) -> None:
        """In a box with a container engine (a microvm box with ``containers``): the image
        cache's entry loaded, the services started, and, when the cache had none and no
        step changed the checkout yet, the engine's images kept (``golem.blueprint.images``).
        The verification says why a box without an engine is not verified."""
        conventions, isolation = self.state.conventions, box.isolation
        if conventions is None or isolation is None or isolation.tier != "microvm":
            return
        if not box.spec.containers:
            return
        images = RunImages(
            self.config,
            self.workspace,
            tenant=self.book.store.tenant or "",
            repo=self.state.request.repo,
            base=self.state.base,
            note=self.note,
        )
        keys = await images.keys(conventions, box)
        loaded = None if keys is None else await images.warm(box, keys)
        await self._start_services(box, conventions)
        if keys is None or loaded is not None or self.state.commit is not None:
            return
        if not await self.repo().is_clean():  # a step changed the checkout as fetched
            return
        self._cold_images = (images, keys.write)
        if not any(isinstance(n, BoxNode) and n.baseline for n in self.blueprint.nodes):
            await self.keep_cold_images(box)

    @property
    def images_cold(self) -> bool:
        """The image cache had no entry for the run's box, and its engine's images are to
        be kept: no agent acted yet."""
        return self._cold_images is not None

    async def keep_cold_images(self, box: Box) -> None:
        """Keep the images the box's engine holds under the cache's key, once, if no agent
        acted yet: after its services started, or after the baseline node ran the loop's
        checks on the base tree (the images the tests themselves pulled)."""
        if self._cold_images is None:
            return
        (images, key), self._cold_images = self._cold_images, None
        await images.keep(box, key)

    async def _start_services(self, box: Box, conventions: RepoConventions) -> None:
        """The services the checks need, started in the box's engine; a note says which
        run, and which could not."""
        if not conventions.services:
            return
        failed = await start_services(box, conventions.services)
        self.services_up = [s for s in conventions.services if s.name not in failed]
        if self.services_up:
            self.note(f"services started in the box: {', '.join(map(reach, self.services_up))}")
        if failed:
            why = "; ".join(f"{name} ({reason})" for name, reason in failed.items())
            self.note(f"services that did not start: {why}")

    def box_started(self, box: Box, purpose: Literal["run", "install"]) -> None:
        """Say (an event) what isolation a box of the run got; the run's own box's is kept
        in the run's state (the API, the dashboard, `golem runs show`, the PR body)."""
        if purpose == "run":
            self.state.isolation = box.isolation
        started = BoxStarted(
            run_id=self.state.id,
            node=self.state.current,
            box_id=box.id,
            purpose=purpose,
            isolation=box.isolation,
        )
        self.emit(started)

    async def dependencies_ready(self) -> None:
        """The run's dependencies are installed: a box made before (a blueprint that runs
        commands before its install node) gets them now."""
        if self._box is not None:
            await self._place_dependencies(self._box)

    async def dependencies_as_installed(self) -> bool:
        """Before a verification: the run's installed dependencies as the install left them.
        A step that changed them since the last verification (an agent's ``pip install``, a
        deleted package: anything whose ctime is newer than the mark made then) has them
        removed and unpacked again from the archive, with a note: what the checks verify,
        and compare with the base commit, runs where the repository's CI would run it, and
        what the agent did to them never ships anyway. Whether it put them back."""
        conventions = self.state.conventions
        if self._box is None or self.state.dependencies is None or conventions is None:
            return False
        paths = [p if p.startswith("/") else f"{WORKSPACE}/{p}" for p in cache_paths(conventions)]
        changed = await self._box.execute(
            ExecRequest(
                cmd=["sh", "-c", _CHANGED_SINCE, "sh", DEPENDENCIES_MARK, *paths],
                workdir=WORKSPACE,
                timeout=300,
            )
        )
        if changed.exit_code == 0 and not changed.stdout_text.strip():
            return False
        self.note(
            f"the installed dependencies changed since they were placed "
            f"({changed.stdout_text.strip()[:200] or 'unknown'}): put back as installed "
            "before verifying"
        )
        done = await self._box.execute(
            ExecRequest(cmd=["rm", "-rf", "--", *paths], workdir=WORKSPACE, timeout=300)
        )
        if done.exit_code != 0:
            raise SandboxError(
                f"could not remove the run's dependencies to put them back: "
                f"{done.stderr_text.strip()[-300:]}"
            )
        await self._place_dependencies(self._box)
        return True

    async def mark_dependencies(self) -> None:
        """After a step of golem's own (setup, a verification): what changes the
        dependencies from now on is a later step's doing (see ``dependencies_as_installed``)."""
        if self._box is not None and self.state.dependencies is not None:
            await self._box.execute(ExecRequest(cmd=["touch", DEPENDENCIES_MARK], timeout=60))

    async def _start_box(self) -> tuple[Box, PreparedRecord | None]:
        """The run's box: from its tenant's prepared snapshot of the repository, base
        branch and image when there is one (a note says why one was not used)."""
        spec = self.box_spec()
        record = self.start_from
        preparing = record is not None or any(
            getattr(node, "action", None) == "keep-prepared" for node in self.blueprint.nodes
        )
        if self.config.prepared.enabled and self.state.base and not preparing:
            image = image_of(spec, self.config)
            repos = PreparedRepos(self.config)
            record = repos.find(self.tenant, self.state.request.repo, self.state.base, image)
        if record is not None:
            try:
                snapshot = self.engine.spec(spec, snapshot=f"sha256:{record.digest}")
                return await self.engine.create_session(snapshot), record
            except (SnapshotNotFound, SnapshotUnsupported) as exc:
                self.note(f"the prepared snapshot {record.name} was not used: {exc.message}")
        return await self.engine.create_session(spec), None

    async def _from_prepared(self, box: Box, record: PreparedRecord) -> None:
        """A box from a prepared snapshot brought to the run's checkout; its dependencies
        placed again only when the run's are not the snapshot's (removed first)."""
        conventions, key = self.state.conventions, self.state.dependencies
        paths = in_checkout(cache_paths(conventions)) if conventions is not None else []
        self._layout = await move_to_checkout(box, self.workspace, self.repo(), excluded=paths)
        same = key == record.dependencies
        if not same and conventions is not None:
            cached = [p if p[0] == "/" else f"{WORKSPACE}/{p}" for p in cache_paths(conventions)]
            await remove_in_box(box, cached, "the prepared snapshot's dependencies")
        if not same or key is None:
            await self._place_dependencies(box)
        else:
            await box.put_file(DEPENDENCIES_MARK, b"")
        head = await self.repo().head()
        skip = same and head == record.commit and await self.repo().is_clean()
        start = PreparedStart(
            name=record.name, digest=record.digest, commit=record.commit, setup_skipped=skip
        )
        self.state.started_from = start
        self.note(
            f"the box started from the prepared snapshot {start.describe()}"
            + ("; setup skipped: same commit and dependencies" if skip else "")
        )
        self.save()

    async def _place_dependencies(self, box: Box) -> None:
        """Unpack the run's dependency archive into the box: its checkout's part into
        /workspace, golem's home's into ``GOLEM_HOME``; the cache paths in the checkout
        kept out of git there (so the agent's ``git status`` and the takeback never see
        them: they never ship)."""
        key, conventions = self.state.dependencies, self.state.conventions
        paths = in_checkout(cache_paths(conventions)) if conventions is not None else []
        if key is not None:
            archive = DependencyCache(self.config).open(key)
            if archive is None:
                raise DependenciesGone(
                    f"the dependencies this run installed ({key[:12]}) are no longer in the "
                    "cache (removed to keep [dependencies] max_bytes, or by hand); start the "
                    "run again to install them afresh"
                )
            with archive:
                for root in (WORKSPACE, GOLEM_HOME):
                    await box.put_archive(root, archive_part(archive, root.lstrip("/")))
        if paths:
            exclude = git_exclude(self.workspace, paths)
            await box.put_file(f"{WORKSPACE}/.git/info/exclude", exclude)
        if key is not None:
            await box.put_file(DEPENDENCIES_MARK, b"")

    async def sync(self) -> list[str]:
        """Bring the box's changes back to the host checkout."""
        if self._box is None:
            return []
        paths = await take_back(self._box, self.workspace, self._layout, repo=self.repo())
        return paths or []

    @property
    def toolshed(self) -> Toolshed:
        """The run's toolshed (its MCP servers' connections), made when first needed."""
        if self._toolshed is None:
            from golem.context.toolshed import Toolshed  # noqa: PLC0415 - loads the MCP SDK

            self._toolshed = Toolshed(self.config)
        return self._toolshed

    async def close(self) -> None:
        """End the run's toolshed servers and remove its box."""
        if self._toolshed is not None:
            toolshed, self._toolshed = self._toolshed, None
            await toolshed.close()
        if self._box is not None:
            box, self._box = self._box, None
            await self.engine.remove_session(box.id)

    async def adopt(self, other: Execution) -> None:
        """Make ``other``'s box and checkout the run's (a best-of-N attempt that won); the
        run's own box is removed."""
        if self._box is not None:
            box, self._box = self._box, None
            await self.engine.remove_session(box.id)
        self._box, other._box = other._box, None
        self._layout, self.services_up = other._layout, other.services_up
        self.state.workspace = other.state.workspace

    @property
    def event_sink(self) -> EventSink[RunEvent] | None:
        """Who is shown the run's events as they come (besides the store)."""
        return self._on_event

    # Models and budgets -------------------------------------------------------------------

    def model(self, name: str | None) -> Model:
        """The model of an agent step: its own, the run's, or the configured default; one
        instance per name for the run (a scripted model goes on where it left off). Its
        provider's limiter is kept in the run's store: one per key for every run and
        server on it."""
        chosen = name or self.state.request.model or self.config.models.default
        self._cold_images = None  # an agent acts: nothing the engine holds is kept now
        if chosen not in self._models:
            ledger = self.book.store.limits
            self._models[chosen] = make_model(chosen, self.config.models, ledger=ledger)
        return self._models[chosen]

    def run_budget(self) -> Budget:
        """The run-wide budget: the blueprint's, with the request's dollars."""
        budget = self.blueprint.budget
        if self.state.request.budget_usd is not None:
            budget = budget.model_copy(update={"usd": self.state.request.budget_usd})
        return budget

    def step_budget(self, own: Budget) -> Budget:
        """An agent step's budget: its own, cut to what the run's budget has left."""
        run = self.run_budget()
        elapsed = sum(step.ended - step.started - step.paused for step in self.state.steps)
        left = {
            "turns": None if run.turns is None else run.turns - self.state.turns,
            "input_tokens": _left(run.input_tokens, self.state.usage, "input"),
            "output_tokens": _left(run.output_tokens, self.state.usage, "output"),
            "usd": None if run.usd is None else run.usd - self.state.cost_usd,
            "wall_seconds": None if run.wall_seconds is None else run.wall_seconds - elapsed,
        }
        spent = [name for name, value in left.items() if value is not None and value <= 0]
        if spent:
            raise BudgetSpent(f"the run's {', '.join(spent)} budget is spent")
        merged = {name: _least(getattr(own, name), value) for name, value in left.items()}
        return Budget.model_validate({k: _as_type(k, v) for k, v in merged.items()})

    def charge(self, usage: Usage, cost: float, turns: int) -> None:
        """Add an agent step's spending to the run."""
        self.state.usage = self.state.usage + usage
        self.state.cost_usd += cost
        self.state.turns += turns

    def trajectory_path(self, node: str) -> Path:
        """A new trajectory file for an agent step of this run: ``trajectory-NODE-N.jsonl``,
        N counting the node's agent steps (each fix round of a loop is one), past any file
        already there, so no step's trajectory is ever written over."""
        mine = re.compile(rf"trajectory-{re.escape(node)}-[0-9]+\.jsonl")
        number = 1 + sum(1 for path in self.state.trajectories if mine.fullmatch(Path(path).name))
        while (path := self.run_dir / f"trajectory-{node}-{number}.jsonl").exists():
            number += 1
        return path


DEPENDENCIES_MARK = "/tmp/.golem-dependencies"
"""Made when the run's dependencies are placed, touched after each verification: what is
newer in them was changed by a step since."""
_CHANGED_SINCE = (
    'mark=$1; shift; [ -e "$mark" ] || { echo "no mark"; exit 0; }; '
    'for path; do [ -e "$path" ] || continue; '
    'find "$path" -cnewer "$mark" -print -quit || exit 1; done'
)
"""The first entry of the dependencies (the paths after the mark) changed since the mark."""
HOME_SHARE = 4
"""golem's home in /tmp takes 1/HOME_SHARE of a run's /workspace tmpfs."""


def _host_secrets(names: object) -> dict[str, str]:
    """The values of host variables a blueprint names as the box's secrets."""
    assert isinstance(names, list)
    missing = [name for name in names if not os.environ.get(str(name))]
    if missing:
        raise ConfigError(
            f"the blueprint's box.secrets_env names {', '.join(missing)}, which this "
            "process's environment does not set; export them where golem runs"
        )
    return {str(name): os.environ[str(name)] for name in names}


def _left(limit: int | None, usage: Usage, kind: str) -> int | None:
    if limit is None:
        return None
    if kind == "output":
        return limit - usage.output_tokens
    return limit - (usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens)


def _least(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _as_type(name: str, value: float | None) -> float | int | None:
    if value is None or name in ("usd", "wall_seconds"):
        return value
    return int(value)
