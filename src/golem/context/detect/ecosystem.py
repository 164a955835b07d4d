"""What an ecosystem's dependencies need from the box: where the install puts them (kept
between runs), which files key them, which registries it reaches, the environment."""

from __future__ import annotations

from dataclasses import dataclass, field

from golem.core import BOX_PATH, WORKSPACE

__all__ = [
    "NODE_TOOLS",
    "Dependencies",
    "go_dependencies",
    "node_dependencies",
    "node_tools_dependencies",
    "path_env",
    "rust_dependencies",
]

VENV = ".venv"
NODE_TOOLS = ".golem/node-tools"
NODE_LOCKS = {
    "pnpm-lock.yaml": ("pnpm", "pnpm install --frozen-lockfile"),
    "yarn.lock": ("yarn", "yarn install --frozen-lockfile"),
    "package-lock.json": ("npm", "npm ci"),
    "npm-shrinkwrap.json": ("npm", "npm ci"),
    "bun.lockb": ("bun", "bun install --frozen-lockfile"),
    "bun.lock": ("bun", "bun install --frozen-lockfile"),
}


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
    """A virtual environment at ``/workspace/.venv``, first on ``PATH``; PyPI."""
    if not venv:
        return Dependencies("python")
    return Dependencies(
        "python",
        cache=[VENV],
        keys=keys,
        registries=[r"^pypi\.org$", r"^files\.pythonhosted\.org$"],
        env={"VIRTUAL_ENV": f"{WORKSPACE}/{VENV}"},
        path=[f"{WORKSPACE}/{VENV}/bin"],
    )


def node_dependencies(directory: str, lockfile: str | None) -> Dependencies:
    """``node_modules`` beside ``package.json`` (in ``directory``, "" for the root)."""
    prefix = f"{directory}/" if directory else ""
    registries = [r"^registry\.npmjs\.org$"]
    if lockfile == "yarn.lock":
        registries.append(r"^registry\.yarnpkg\.com$")
    keys = [f"{prefix}package.json"] + ([f"{prefix}{lockfile}"] if lockfile else [])
    return Dependencies("node", cache=[f"{prefix}node_modules"], keys=keys, registries=registries)


def node_tools_dependencies() -> Dependencies:
    """Where a package manager the box lacks (pnpm, yarn) is installed by npm."""
    return Dependencies(
        "node", cache=[NODE_TOOLS], path=[f"{WORKSPACE}/{NODE_TOOLS}/node_modules/.bin"]
    )


def rust_dependencies() -> Dependencies:
    """Cargo's home (its registry index and crates) inside the workspace."""
    return Dependencies(
        "rust",
        cache=[".golem/cargo"],
        keys=["Cargo.toml", "Cargo.lock"],
        registries=[r"^index\.crates\.io$", r"^static\.crates\.io$", r"^crates\.io$"],
        env={"CARGO_HOME": f"{WORKSPACE}/.golem/cargo"},
    )


def go_dependencies() -> Dependencies:
    """Go's module cache inside the workspace; its build cache in ``/tmp``."""
    return Dependencies(
        "go",
        cache=[".golem/go"],
        keys=["go.mod", "go.sum"],
        registries=[r"^proxy\.golang\.org$", r"^sum\.golang\.org$", r"^storage\.googleapis\.com$"],
        env={
            "GOMODCACHE": f"{WORKSPACE}/.golem/go/mod",
            "GOPATH": f"{WORKSPACE}/.golem/go",
            "GOCACHE": "/tmp/go-build",
        },
    )
