"""The head of the supervisor's source: registers the other modules, kept as source text,
as the package ``golem_supervisor``, compiling each on its first import.

``supervisor_source`` appends ``install({name: source, ...})`` and the call of
``golem_supervisor.main.main``; modules a box may never use (the bridge, the file tools,
transfers) are compiled only when first imported.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

PACKAGE = "golem_supervisor"
ModuleSpec: Any = type(sys.__spec__)  # importlib.machinery.ModuleSpec, without its import


class SourceModules:
    """A meta path finder and loader for the modules of PACKAGE, from their source."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.sources = sources

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> Any:
        package, _, name = fullname.rpartition(".")
        if package != PACKAGE or name not in self.sources:
            return None
        return ModuleSpec(fullname, self, origin=f"<golem-supervisor/{name}.py>")

    def create_module(self, spec: Any) -> None:
        return None  # the default module

    def exec_module(self, module: ModuleType) -> None:
        name = module.__name__.rpartition(".")[2]
        code = compile(self.sources[name], f"<golem-supervisor/{name}.py>", "exec")
        exec(code, module.__dict__)


def install(sources: dict[str, str]) -> None:
    """Make ``import golem_supervisor.<name>`` find ``sources[name]``."""
    package = type(sys)(PACKAGE)
    package.__path__ = []
    sys.modules[PACKAGE] = package
    sys.meta_path.insert(0, SourceModules(sources))
