"""Loading golem's larger import graphs quickly: with the cyclic collector paused, and a
module a command will need later loaded in the background meanwhile.

An import creates hundreds of thousands of objects that live as long as the process; the
collector scans them again and again while they load (a sixth of `golem run`'s imports)
and can never free one. A model provider's SDK takes a second or two to import; a run
that will call it can load it while its own work waits on git and the box.
"""

from __future__ import annotations

import gc
import importlib
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused", "import_in_background"]


class _ImportState:
    """How many blocks pause the collector now, whether it ran before the first, and which
    modules are being imported in the background."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.enable_after = False
        self.started: set[str] = set()


_state = _ImportState()


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while the block runs (imports, in any thread);
    when the last such block ends, what was loaded is moved out of the collector's way
    (``gc.freeze``) and collecting goes on as before. A collector that was off stays off."""
    with _state.lock:
        _state.count += 1
        if _state.count == 1:
            _state.enable_after = gc.isenabled()
            gc.disable()
    try:
        yield
    finally:
        with _state.lock:
            _state.count -= 1
            if _state.count == 0:
                gc.freeze()
                if _state.enable_after:
                    gc.enable()


def import_in_background(module: str) -> threading.Thread | None:
    """Start importing ``module`` in a daemon thread (None if it is loaded or loading
    already). An
    import that fails there is left to fail again, with its own message, where the module
    is imported for use; one that is still loading then waits for it to end."""
    with _state.lock:
        if module in sys.modules or module in _state.started:
            return None
        _state.started.add(module)
    thread = threading.Thread(
        target=_import_quietly, args=(module,), name=f"import {module}", daemon=True
    )
    thread.start()
    return thread


def _import_quietly(module: str) -> None:
    try:
        with collector_paused():
            importlib.import_module(module)
    except BaseException:  # noqa: S110 - the import for use says what went wrong
        pass
