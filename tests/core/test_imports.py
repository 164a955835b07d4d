"""golem.core.imports: the collector paused while imports run, in any thread, and back as
it was after the last; modules imported in the background, failures left to the import for
use."""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.core.imports import collector_paused, import_in_background


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_the_collector_is_paused_in_the_block_and_back_after_it() -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_the_collector_stays_paused_until_the_last_block_of_any_thread_ends() -> None:
    inside, leave = threading.Event(), threading.Event()

    def other_block() -> None:
        with collector_paused():
            inside.set()
            leave.wait(timeout=30)

    thread = threading.Thread(target=other_block)
    thread.start()
    inside.wait(timeout=30)
    with collector_paused():
        pass
    still_paused = not gc.isenabled()
    leave.set()
    thread.join(timeout=30)

    assert still_paused
    assert gc.isenabled()


def test_a_module_imported_in_the_background_is_the_one_later_imports_get(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "golem_background_probe.py").write_text("LOADED = object()\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    thread = import_in_background("golem_background_probe")
    assert thread is not None
    import golem_background_probe

    thread.join(timeout=30)
    assert sys.modules["golem_background_probe"] is golem_background_probe
    assert import_in_background("golem_background_probe") is None  # loaded: nothing to do
    del sys.modules["golem_background_probe"]


def test_a_background_import_that_fails_is_left_to_fail_again_where_it_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "golem_broken_probe.py").write_text("import golem_no_such_module_at_all\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    thread = import_in_background("golem_broken_probe")
    assert thread is not None
    thread.join(timeout=30)

    assert "golem_broken_probe" not in sys.modules
    with pytest.raises(ModuleNotFoundError, match="golem_no_such_module_at_all"):
        import golem_broken_probe  # noqa: F401
