"""What the install key covers (``golem.blueprint.install_inputs``), read with real git:
every file the install commands name, transitively, and the files of the directories they
run in, so that a change to any file that could change what the install does changes the
key; a file nothing names, below the root, leaves it alone (the cache keeps serving)."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.blueprint.dependencies import InstallKeyParts, install_key, read_inputs
from golem.blueprint.install_inputs import SCAN_FILE_BYTES
from tests.blueprint.repos import git

UNNAMED = {"src/app/module.py": "VALUE = 1\n", "docs/guide/intro.md": "Hello.\n"}
"""Files below the root that no install command or install file names."""

CASES: dict[str, tuple[dict[str, str], list[str], str]] = {
    "a script the command runs": ({"install.sh": "echo hi\n"}, ["./install.sh"], "install.sh"),
    "a script in a directory": (
        {"scripts/bootstrap": "echo hi\n"}, ["sh scripts/bootstrap"], "scripts/bootstrap",
    ),
    "the Makefile of make's target": (
        {"Makefile": "deps:\n\t./tools/deps.sh\n", "tools/deps.sh": "pip install a\n"},
        ["make deps"], "Makefile",
    ),
    "a Makefile target's recipe file": (
        {"Makefile": "deps:\n\t./tools/deps.sh\n", "tools/deps.sh": "pip install a\n"},
        ["make deps"], "tools/deps.sh",
    ),
    "a requirements file another one names": (
        {"requirements-dev.txt": "-r requirements/base.txt\n", "requirements/base.txt": "a==1\n"},
        ["pip install -r requirements-dev.txt"], "requirements/base.txt",
    ),
    "an attached -r file": (
        {"ci/reqs.txt": "a==1\n"}, ["pip install -rci/reqs.txt"], "ci/reqs.txt",
    ),
    "a --requirement= file": (
        {"ci/reqs.txt": "a==1\n"}, ["pip install --requirement=ci/reqs.txt"], "ci/reqs.txt",
    ),
    "the project's setup.py": (
        {"setup.py": "from setuptools import setup\nsetup()\n"}, ["pip install -e ."], "setup.py",
    ),
    "a package.json lifecycle script": (
        {"package.json": '{"scripts": {"postinstall": "node scripts/postinstall.js"}}\n',
         "scripts/postinstall.js": "console.log(1)\n"},
        ["npm ci"], "scripts/postinstall.js",
    ),
    "the manifest of the directory a command cds into": (
        {"web/package.json": "{}\n"}, ["cd web && npm ci"], "web/package.json",
    ),
    "a dot-file of that directory": ({"web/.npmrc": "a=1\n"}, ["cd web && npm ci"], "web/.npmrc"),
    "a script run from that directory": (
        {"web/setup.sh": "echo\n"}, ["cd web && ./setup.sh"], "web/setup.sh",
    ),
    "the files of a directory a command names": (
        {"libs/a/setup.py": "setup()\n"}, ["pip install ./libs/a"], "libs/a/setup.py",
    ),
    "tool configuration in a dot-directory": (
        {".cargo/config.toml": "[net]\noffline = false\n"}, ["cargo fetch"], ".cargo/config.toml",
    ),
    "a script sourced beside its own": (
        {"tools/install.sh": '. "$(dirname "$0")/lib.sh"\n', "tools/lib.sh": "f() { :; }\n"},
        ["sh tools/install.sh"], "tools/lib.sh",
    ),
    "a script named through a variable": (
        {"install.sh": 'sh "$ROOT/tools/setup.sh"\n', "tools/setup.sh": "echo\n"},
        ["sh install.sh"], "tools/setup.sh",
    ),
    "a script named by a script named by a script": (
        {"install.sh": "sh tools/a.sh\n", "tools/a.sh": "sh tools/b.sh\n", "tools/b.sh": "echo\n"},
        ["sh install.sh"], "tools/b.sh",
    ),
    "a script in a dot-directory a script names": (
        {"install.sh": "sh .ci/deps.sh\n", ".ci/deps.sh": "sh tools/x.sh\n", "tools/x.sh": "\n"},
        ["sh install.sh"], "tools/x.sh",
    ),
    "a release a yarnrc names": (
        {".yarnrc.yml": "yarnPath: tools/yarn-4.cjs\n", "tools/yarn-4.cjs": "x\n"},
        ["yarn install"], "tools/yarn-4.cjs",
    ),
    "any file at the root": ({"notes.txt": "x\n"}, ["true"], "notes.txt"),
}  # fmt: skip


def committed(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "files", cwd=root)


def repository(root: Path, files: dict[str, str]) -> Path:
    git("init", "-q", "-b", "main", cwd=root)
    committed(root, {**UNNAMED, **files})
    return root


def key(root: Path, commands: list[str], declared: list[str] | None = None) -> str:
    """The install key of ``commands`` at the repository's HEAD."""
    parts = InstallKeyParts(
        tenant="", repo="r", image="process:host", commands=commands, env={}, cache=[".venv"],
        inputs=read_inputs(root, commands, declared or []),
    )  # fmt: skip
    return install_key(parts, "branch refs/remotes/origin/main")


def appended(root: Path, path: str, text: str = "# changed\n") -> None:
    committed(root, {path: (root / path).read_text() + text})


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_change_to_a_file_the_install_could_read_changes_the_key(
    case: str, tmp_path: Path
) -> None:
    files, commands, changed = CASES[case]
    root = repository(tmp_path, files)
    before = key(root, commands)
    assert changed in read_inputs(root, commands, [])
    appended(root, changed)
    assert key(root, commands) != before


def test_files_below_the_root_that_nothing_names_leave_the_key_alone(tmp_path: Path) -> None:
    files = {
        "install.sh": "sh tools/setup.sh\n",
        "tools/setup.sh": "pip install -r requirements.txt\n",
        "requirements.txt": "a==1\n",
        "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["src/app"]\n',
    }
    root = repository(tmp_path, files)
    commands = ["sh install.sh"]
    before = key(root, commands)
    assert set(read_inputs(root, commands, [])) == set(files)
    for path in UNNAMED:  # src/app is named as a directory by a file's text: not taken
        appended(root, path)
    assert key(root, commands) == before


def test_documentation_counts_but_what_it_names_does_not(tmp_path: Path) -> None:
    readme = "See src/app/module.py and docs/guide/intro.md; run ./install.sh.\n"
    root = repository(tmp_path, {"README.md": readme, "install.sh": "echo\n"})
    assert set(read_inputs(root, ["true"], [])) == {"README.md", "install.sh"}
    before = key(root, ["true"])
    appended(root, "README.md")
    assert key(root, ["true"]) != before


def test_a_declared_lockfile_still_keys_the_install(tmp_path: Path) -> None:
    root = repository(tmp_path, {"deps/lock.json": "{}\n"})
    commands = ["true"]
    before = key(root, commands, ["deps/lock.json", "deps/*.json", "missing.lock"])
    appended(root, "deps/lock.json", "\n")
    assert key(root, commands, ["deps/lock.json", "deps/*.json", "missing.lock"]) != before
    assert read_inputs(root, commands, ["missing.lock"])["missing.lock"] == ""


def test_a_file_too_large_to_read_is_keyed_but_not_followed(tmp_path: Path) -> None:
    big = "# padding\n" * (SCAN_FILE_BYTES // 10) + "./tools/deps.sh\n"
    root = repository(tmp_path, {"Makefile": big, "tools/deps.sh": "echo\n", "bin.dat": ""})
    (root / "bin.dat").write_bytes(b"\0tools/deps.sh\n")  # not text: not read for names
    committed(root, {})
    inputs = read_inputs(root, ["make deps", "cat bin.dat"], [])
    assert {"Makefile", "bin.dat"} <= set(inputs)
    assert "tools/deps.sh" not in inputs


def test_names_leading_out_of_the_repository_are_never_read(tmp_path: Path) -> None:
    root = repository(tmp_path, {"install.sh": "cat ../../../etc/passwd /etc/hostname\n"})
    (root / "lock").symlink_to("/etc/hostname")
    committed(root, {})
    inputs = read_inputs(root, ["sh install.sh", "cat lock"], [])
    assert set(inputs) == {"install.sh", "lock"}  # the link counts as the link, by git's id
    assert inputs["lock"] == git("rev-parse", "HEAD:lock", cwd=root).strip()
