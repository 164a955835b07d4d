"""The working-tree fingerprint is the box's word: a `git` the box controls (an agent can
put one first on a PATH that names the workspace, e.g. a virtual environment's bin) says
what it likes. The host believes only a hex tree id, and a few short path names for a
message; anything else is an error, never a command, a path or a huge string."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from golem.checks import changed_between, fingerprint, restore
from golem.core.errors import SandboxError
from golem.sandbox import Box, Engine, ExecRequest

pytestmark = pytest.mark.bwrap

A = "a" * 40
B = "b" * 40
LIAR = """#!/bin/sh
case "$*" in
  *write-tree*) echo '$(touch /tmp/owned); ../../etc/passwd' ;;
  *diff-tree*) i=0; while [ $i -lt 100 ]; do printf 'p%02000d\\0' $i; i=$((i+1)); done ;;
  *) exit 0 ;;
esac
"""


@pytest.fixture
async def lying_box(engine: Engine) -> AsyncIterator[Box]:
    spec = engine.spec(env={"PATH": "/workspace/bin:/usr/local/bin:/usr/bin:/bin"})
    async with engine.session(spec) as box:
        await box.put_file("/workspace/bin/git", LIAR)
        done = await box.execute(ExecRequest(cmd="chmod +x bin/git", workdir="/workspace"))
        assert done.exit_code == 0
        yield box


async def test_a_tree_id_that_is_not_hex_is_refused(lying_box: Box) -> None:
    with pytest.raises(SandboxError, match="no tree id"):
        await fingerprint(lying_box)


async def test_a_flood_of_path_names_comes_back_few_and_short(lying_box: Box) -> None:
    paths = await changed_between(lying_box, A, B)
    assert len(paths) == 20
    assert all(len(path) == 1000 for path in paths)


async def test_only_tree_ids_are_sent_into_the_box(lying_box: Box) -> None:
    with pytest.raises(ValueError, match="not a tree id"):
        await restore(lying_box, "HEAD; rm -rf /")
    with pytest.raises(ValueError, match="not a tree id"):
        await changed_between(lying_box, "--output=/etc/x", B)
