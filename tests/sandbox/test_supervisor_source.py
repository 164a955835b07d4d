"""The supervisor's source: its modules, as the oldest Python a box may have reads them,
and joined into the one string a box's python3 runs."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib import resources

import pytest

from golem.sandbox.supervisor import supervisor_source

BOX_MODULES = sorted(
    entry.name
    for entry in resources.files("golem.sandbox.supervisor.box").iterdir()
    if entry.name.endswith(".py")
)
MAX_ARG_STRLEN = 128 * 1024  # Linux's limit on one argv string, terminating NUL included


def test_the_box_package_has_the_modules_the_supervisor_is_made_of() -> None:
    assert {"bootstrap.py", "framing.py", "main.py", "tools.py"} <= set(BOX_MODULES)


@pytest.mark.parametrize("name", BOX_MODULES)
def test_each_box_module_is_python_3_8_syntax(name: str) -> None:
    source = resources.files("golem.sandbox.supervisor.box").joinpath(name).read_text()
    ast.parse(source, feature_version=(3, 8))


def test_each_box_module_imports_only_the_stdlib_and_its_siblings() -> None:
    for name in BOX_MODULES:
        source = resources.files("golem.sandbox.supervisor.box").joinpath(name).read_text()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                assert node.module.split(".")[0] in sys.stdlib_module_names, (name, node.module)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in sys.stdlib_module_names, (name, alias)


def test_the_joined_source_fits_one_argv_string() -> None:
    assert len(supervisor_source().encode()) < MAX_ARG_STRLEN


def test_the_joined_source_registers_modules_that_import_each_other() -> None:
    source = supervisor_source().replace(
        "from golem_supervisor.main import main\n\nmain()\n",
        "from golem_supervisor import framing, tools\n"
        "print(framing.PROTOCOL_VERSION, sorted(tools.OPS))\n",
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", source], capture_output=True, text=True, check=True
    )
    assert done.stdout == "1 ['glob', 'grep', 'ls', 'probe', 'read']\n"
