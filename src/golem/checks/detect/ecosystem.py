"""What an ecosystem's dependencies need from the box: where the install puts them (kept
between runs), which files key them, which registries it reaches, the environment."""

from __future__ import annotations

from dataclasses import dataclass, field

from golem.core import BOX_PATH, GOLEM_HOME

__all__ = [
    "ECOSYSTEM_REGISTRIES",
    "NODE_TOOLS",
    "Dependencies",
    "go_dependencies",
    "known_registries",
    "node_dependencies",
    "node_tools_dependencies",
    "path_env",
    "rust_dependencies",
]

VENV = f"{GOLEM_HOME}/venv"
NODE_TOOLS = f"{GOLEM_HOME}/node-tools"
CARGO_HOME = f"{GOLEM_HOME}/cargo"
GO_PATH = f"{GOLEM_HOME}/go"
NODE_LOCKS = {
    "pnpm-lock.yaml": ("pnpm", "pnpm install --frozen-lockfile"),
    "yarn.lock": ("yarn", "yarn install --frozen-lockfile"),
    "package-lock.json": ("npm", "npm ci"),
    "npm-shrinkwrap.json": ("npm", "npm ci"),
    "bun.lockb": ("bun", "bun install --frozen-lockfile"),
    "bun.lock": ("bun", "bun install --frozen-lockfile"),
}

PYPI = ["pypi.org", "files.pythonhosted.org"]
NPM = ["registry.npmjs.org"]
YARN = ["registry.yarnpkg.com"]
CRATES = ["index.crates.io", "static.crates.io", "crates.io"]
GO_PROXY = ["proxy.golang.org", "sum.golang.org", "storage.googleapis.com"]
ECOSYSTEM_REGISTRIES: dict[str, list[str]] = {
    "python": PYPI,
    "node": [*NPM, *YARN],
    "rust": CRATES,
    "go": GO_PROXY,
}
"""The registries golem knows for each ecosystem it recognises: what an install may reach
when the operator lets no repository name its own (``repository_registries = false``)."""


def known_registries(ecosystems: list[str]) -> list[str]:
    """The host names golem knows for ``ecosystems``."""
    return [host for eco in ecosystems for host in ECOSYSTEM_REGISTRIES.get(eco, [])]


@dataclass(frozen=True)
class Dependencies:
    """One ecosystem's side of ``RepoConventions``' install fields."""

    ecosystem: str
    cache: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    registries: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    path: list[str] = field(default_factory=list)
    """Directories to put before the box's ``PATH``."""


def path_env(dependencies: list[Dependencies]) -> dict[str, str]:
    """``PATH``: each ecosystem's directories, in order, before the box's own."""
    directories = [d for dependency in dependencies for d in dependency.path]
    return {"PATH": ":".join([*dict.fromkeys(directories), BOX_PATH])} if directories else {}


def python_dependencies(keys: list[str], venv: bool) -> Dependencies:
    """A virtual environment in golem's home (``/tmp/golem/venv``, outside the checkout),
    first on ``PATH``; PyPI."""
    if not venv:
        return Dependencies("python")
    return Dependencies(
        "python",
        cache=[VENV],
        keys=keys,
        registries=list(PYPI),
        env={"VIRTUAL_ENV": VENV},
        path=[f"{VENV}/bin"],
    )


def node_dependencies(directory: str, lockfile: str | None) -> Dependencies:
    """``node_modules`` beside ``package.json`` (in ``directory``, "" for the root)."""
    prefix = f"{directory}/" if directory else ""
    registries = [*NPM, *YARN] if lockfile == "yarn.lock" else list(NPM)
    keys = [f"{prefix}package.json"] + ([f"{prefix}{lockfile}"] if lockfile else [])
    return Dependencies("node", cache=[f"{prefix}node_modules"], keys=keys, registries=registries)


def node_tools_dependencies() -> Dependencies:
    """Where a package manager the box lacks (pnpm, yarn) is installed by npm."""
    return Dependencies("node", cache=[NODE_TOOLS], path=[f"{NODE_TOOLS}/node_modules/.bin"])


def rust_dependencies() -> Dependencies:
    """Cargo's home (its registry index and crates) in golem's home."""
    return Dependencies(
        "rust",
        cache=[CARGO_HOME],
        keys=["Cargo.toml", "Cargo.lock"],
        registries=list(CRATES),
        env={"CARGO_HOME": CARGO_HOME},
    )


def go_dependencies() -> Dependencies:
    """Go's module cache in golem's home; its build cache in ``/tmp``."""
    return Dependencies(
        "go",
        cache=[GO_PATH],
        keys=["go.mod", "go.sum"],
        registries=list(GO_PROXY),
        env={"GOMODCACHE": f"{GO_PATH}/mod", "GOPATH": GO_PATH, "GOCACHE": "/tmp/go-build"},
    )
