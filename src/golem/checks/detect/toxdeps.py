"""What tox's base test environment installs (``deps`` and ``extras`` of ``[testenv]``),
so that the venv golem makes holds what the tests need even when only tox.ini names it."""

from __future__ import annotations

import configparser
import re
from typing import Any

from golem.checks.detect.found import RepoFiles, table

__all__ = ["tox_commands", "tox_requirements"]

FACTOR = re.compile(r"^[\w.,!-]+:\s+")


def tox_requirements(files: RepoFiles) -> tuple[list[str], list[str], list[str]]:
    """(requirements, requirements files, extras) of tox's ``[testenv]``, from tox.ini,
    setup.cfg's ``[testenv]``, pyproject's ``legacy_tox_ini`` or an ``env_run_base``."""
    pyproject = files.toml("pyproject.toml")
    native = table(files.toml("tox.toml"), "env_run_base") or table(
        pyproject, "tool", "tox", "env_run_base"
    )
    if native:
        return (*_arguments(files, _strings(native.get("deps"))), _strings(native.get("extras")))
    legacy = table(pyproject, "tool", "tox").get("legacy_tox_ini")
    for text in (files.text("tox.ini"), legacy, files.text("setup.cfg")):
        section = _testenv(text) if isinstance(text, str) else None
        if section is not None:
            deps = section.get("deps", "").splitlines()
            extras = re.split(r"[,\s]+", section.get("extras", ""))
            return (*_arguments(files, deps), [extra for extra in extras if extra])
    return [], [], []


def _testenv(text: str) -> configparser.SectionProxy | None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    return parser["testenv"] if parser.has_section("testenv") else None


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _arguments(files: RepoFiles, lines: list[str]) -> tuple[list[str], list[str]]:
    """(requirements, requirements files) of tox ``deps`` lines, ``{toxinidir}`` made
    relative; left out: lines for some factors only (``py39: x``, ``pytestmain: git+...``),
    URLs (the install reaches registries only), other substitutions, options and the
    project itself."""
    found: list[str] = []
    requirement_files: list[str] = []
    for raw in lines:
        line = raw.split(" #", 1)[0].strip()
        line = line.replace("{toxinidir}/", "").replace("{toxinidir}", ".")
        if not line or line.startswith("#") or "{" in line or "://" in line or FACTOR.match(line):
            continue
        named = re.match(r"^-r\s*(\S+)$", line)
        if named and files.exists(named[1]):
            requirement_files.append(named[1])
        elif not line.startswith(("-", ".")):
            found.append(line)
    return found, requirement_files


def tox_commands(files: RepoFiles, env: str) -> list[str] | None:
    """The ``commands`` of tox's ``[testenv]`` (``env`` "") or ``[testenv:<env>]`` as
    shell lines, tox's substitutions resolved for the venv (``{envpython}``: python3,
    ``{posargs:x}``: x); None without them, or when one needs a substitution golem
    cannot resolve."""
    section = "testenv" + (f":{env}" if env else "")
    native = table(files.toml("tox.toml"), "env_run_base" if not env else "env")
    if not env and native.get("commands"):
        lines = [" ".join(map(str, c)) for c in native["commands"] if isinstance(c, list)]
        return _resolved(lines)
    text = files.text("tox.ini")
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text or "")
    except configparser.Error:
        return None
    if not parser.has_option(section, "commands"):
        return None
    joined = re.sub(r"\\\n\s*", " ", parser[section]["commands"])
    return _resolved(joined.splitlines())


def _resolved(lines: list[str]) -> list[str] | None:
    found: list[str] = []
    for raw in lines:
        line = raw.strip().removeprefix("- ").strip()
        line = re.sub(r"\{posargs:([^}]*)\}", r"\1", line).replace("{posargs}", "")
        line = line.replace("{envpython}", "python3").replace("{envbindir}/", "")
        line = line.replace("{toxinidir}/", "").replace("{toxinidir}", ".")
        if "{" in line:  # another section's value, an env name...: known only to tox
            return None
        if line and not line.startswith("#"):
            found.append(" ".join(line.split()))
    return found or None
