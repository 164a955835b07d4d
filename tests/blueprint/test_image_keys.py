"""The image cache's keys (``golem.blueprint.images``), from real clones of a local bare
repository: the files that define a run's images (any Dockerfile or Containerfile, the
compose files and the CI file of its services), those images' names, and the dependency
files that key its install (its tests may start images of their own) decide the key; no
other file does; a tenant, a repository, or the dependency cache's kind never share one;
a pull request's head never writes the base branch's entry."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from golem.blueprint.dependencies import InstallKeyParts, install_key
from golem.blueprint.images import IMAGE_FILES, image_keys
from golem.checks import RepoConventions, Service
from tests.blueprint.repos import git

SERVICE = Service(name="postgres", image="postgres:16", origin=".github/workflows/ci.yml")
CONVENTIONS = RepoConventions(
    services=[SERVICE], compose=["deploy/compose.yaml"], source="test",
    cache_keys=["uv.lock", "requirements/*.txt"],
)  # fmt: skip
FILES = {
    "app/Dockerfile": "FROM golem/busybox\n",
    "tools/build.Containerfile": "FROM golem/busybox\n",
    "deploy/compose.yaml": "services: {}\n",
    ".github/workflows/ci.yml": "jobs: {}\n",
    "uv.lock": "version = 1\n",
    "requirements/test.txt": "testcontainers\n",
    "README.md": "hello\n",
    "src/main.py": "print(1)\n",
}


def commit_all(work: Path, message: str) -> None:
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", message, cwd=work)


def clone_of(parent: Path, files: dict[str, str]) -> tuple[Path, Path]:
    """A work tree holding ``files`` pushed to a bare remote, and a fresh clone of it."""
    work = parent / "work"
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    git("init", "-q", "-b", "main", cwd=work)
    commit_all(work, "one")
    remote = parent / "remote.git"
    git("clone", "-q", "--bare", str(work), str(remote), cwd=parent)
    git("remote", "add", "origin", str(remote), cwd=work)
    clone = parent / "clone"
    git("clone", "-q", str(remote), str(clone), cwd=parent)
    return work, clone


def key_of(clone: Path, conventions: RepoConventions = CONVENTIONS, tenant: str = "acme") -> str:
    keys = image_keys(
        clone, conventions, tenant=tenant, repo="acme/app", image="microvm:devbox", base="main"
    )
    return keys.write


def changed(tmp_path: Path, name: str, text: str) -> str:
    """The key after a commit that changes ``name`` on main, fetched into the clone."""
    work, clone = clone_of(tmp_path, FILES)
    before = key_of(clone)
    (work / name).parent.mkdir(parents=True, exist_ok=True)
    (work / name).write_text(text)
    commit_all(work, f"change {name}")
    git("push", "-q", "origin", "main", cwd=work)
    git("pull", "-q", "--ff-only", cwd=clone)
    after = key_of(clone)
    assert git("rev-parse", "HEAD", cwd=clone) == git("rev-parse", "HEAD", cwd=work)
    return "same" if before == after else "changed"


@pytest.mark.parametrize(
    ("name", "effect"),
    [
        ("app/Dockerfile", "changed"),
        ("tools/build.Containerfile", "changed"),
        ("services/worker/Dockerfile.dev", "changed"),  # a new one counts too
        ("deploy/compose.yaml", "changed"),
        (".github/workflows/ci.yml", "changed"),
        ("uv.lock", "changed"),  # a test dependency naming another image
        ("requirements/test.txt", "changed"),
        ("requirements/docs.txt", "changed"),  # a new file its pattern matches
        ("README.md", "same"),
        ("src/main.py", "same"),
    ],
)
def test_only_the_files_that_define_the_images_or_the_dependencies_change_the_image_key(
    tmp_path: Path, name: str, effect: str
) -> None:
    assert changed(tmp_path, name, "changed\n") == effect


def test_the_service_images_named_tenant_and_kind_each_make_another_key(tmp_path: Path) -> None:
    _, clone = clone_of(tmp_path, FILES)
    other_image = CONVENTIONS.model_copy(
        update={"services": [SERVICE.model_copy(update={"image": "postgres:17"})]}
    )
    keys = {key_of(clone), key_of(clone, other_image), key_of(clone, tenant="other")}
    parts = InstallKeyParts(
        tenant="acme", repo="acme/app", image="microvm:devbox", commands=["postgres:16"],
        env={}, cache=[], inputs={},
    )  # fmt: skip
    kinds = {install_key(parts, "branch x"), install_key(replace(parts, kind="images"), "branch x")}

    assert len(keys) == 3
    assert len(kinds) == 2


def test_a_pull_requests_head_reads_the_base_entry_and_writes_only_its_own(
    tmp_path: Path,
) -> None:
    _, clone = clone_of(tmp_path, FILES)
    base = image_keys(
        clone, CONVENTIONS, tenant="acme", repo="acme/app", image="microvm:devbox", base="main"
    )
    git("checkout", "-q", "-b", "golem/change", cwd=clone)
    (clone / "app" / "Dockerfile").write_text("FROM golem/busybox\nRUN echo planted\n")
    commit_all(clone, "agent")

    keys = image_keys(
        clone, CONVENTIONS, tenant="acme", repo="acme/app", image="microvm:devbox", base="main"
    )

    assert base.shared
    assert not keys.shared
    assert keys.write != base.write
    assert keys.read == (keys.read[0], keys.write)
    assert keys.read[0] != base.write  # its Dockerfile differs: not even the base's to read


@pytest.mark.parametrize(
    ("path", "defines"),
    [
        ("Dockerfile", True),
        ("a/b/Dockerfile.test", True),
        ("web.dockerfile", True),
        ("Containerfile", True),
        ("ci/app.Containerfile", True),
        ("Dockerfiles/readme.md", False),
        ("docs/Dockerfile.md/x.txt", False),
        ("mydockerfile", False),
    ],
)
def test_the_files_that_build_an_image_are_recognised_by_name(path: str, defines: bool) -> None:
    assert bool(IMAGE_FILES.search(path)) is defines
