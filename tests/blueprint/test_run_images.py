"""The image cache in a run's box (``RunImages``), on the session's microVM containers box:
what goes wrong with the cache is a note, and the run goes on cold."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.blueprint.dependencies import DependencyCache, InstallKeys
from golem.blueprint.images import RunImages
from golem.core import load_config
from golem.sandbox import Box
from tests.conftest import CONTAINERS_TIMEOUT, SHARED_LOOP

pytestmark = SHARED_LOOP


@pytest.mark.microvm
@CONTAINERS_TIMEOUT
async def test_a_cache_entry_that_does_not_load_is_a_note_and_the_run_goes_on_cold(
    containers_box: Box, tmp_path: Path
) -> None:
    config = load_config({"state_dir": str(tmp_path / "state")}, files=[])
    keys = InstallKeys(read=("d" * 64,), write="d" * 64, shared=True)
    DependencyCache(config).path(keys.write).parent.mkdir(parents=True)
    DependencyCache(config).path(keys.write).write_bytes(b"not an image archive\n" * 100)
    notes: list[str] = []
    images = RunImages(config, tmp_path, tenant="t", repo="r", base="main", note=notes.append)

    loaded = await images.warm(containers_box, keys)
    answered = await containers_box.execute("docker info --format '{{.ServerVersion}}'")

    assert loaded is None
    assert len(notes) == 1
    assert notes[0].startswith("images: the cached images did not load (docker load failed")
    assert notes[0].endswith("starting cold")
    assert answered.exit_code == 0  # the engine carries on
