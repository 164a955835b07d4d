"""A box engine's images through the image cache, on a real microVM guest (the session's
containers box): ``docker save`` of images built in the box, as Debian's engine (20.10)
writes it (a layer two images share written once, the other's ``layer.tar`` a symlink to
it), passes the host's check with its links resolved in the box, and loads into an engine
that no longer has them."""

from __future__ import annotations

import secrets
import tarfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from golem.sandbox import Box, engine_images, load_images, save_images
from tests.conftest import CONTAINERS_TIMEOUT, SHARED_LOOP

pytestmark = SHARED_LOOP

# The first adds a layer to golem's base; the second only a command, the base's layer its
# top one: docker save writes that layer once for both and links the other to it.
DOCKERFILES = [
    'FROM golem/busybox\nRUN echo {said} >/built\nCMD ["cat", "/built"]\n',
    'FROM golem/busybox\nCMD ["echo", "{said}"]\n',
]


async def _file_chunks(path: Path) -> AsyncIterator[bytes]:
    with path.open("rb") as handle:
        while data := handle.read(1024 * 1024):
            yield data


@pytest.mark.microvm
@CONTAINERS_TIMEOUT
async def test_an_image_built_in_the_box_is_saved_checked_and_loads_again(
    containers_box: Box, tmp_path: Path
) -> None:
    said = ["cached-" + secrets.token_hex(6) for _ in range(2)]
    tags = [f"local/{text}:1" for text in said]
    for text, tag, dockerfile in zip(said, tags, DOCKERFILES, strict=True):
        await containers_box.put_file(f"{text}/Dockerfile", dockerfile.format(said=text).encode())
        built = await containers_box.execute(
            f"docker build -q --network host -t {tag} {text} >/dev/null"
        )
        assert built.exit_code == 0, built.stderr_text
    raw = await containers_box.execute(f"docker save {' '.join(tags)} | tar -tv | grep -c '^l'")
    assert int(raw.stdout_text.strip()) >= 1  # docker save itself wrote a link

    images = await engine_images(containers_box)
    archive = tmp_path / "cache" / "images.tar"
    kept = await save_images(containers_box, archive, containers_box.limits, tags)
    removed = await containers_box.execute(f"docker image rm -f {' '.join(tags)}")
    said_on_load = await load_images(containers_box, _file_chunks(archive))
    ran = await containers_box.execute(
        f"docker run --rm {tags[0]} && docker run --rm {tags[1]}; "
        f"docker image rm -f {' '.join(tags)}"
    )

    assert set(tags) <= set(images)
    assert "golem/busybox:latest" not in images
    assert sorted(kept.tags) == sorted(tags)
    with tarfile.open(archive) as saved:
        assert all(member.isfile() or member.isdir() for member in saved.getmembers())
    assert removed.exit_code == 0, removed.stderr_text
    assert all(tag in said_on_load for tag in tags)
    assert ran.stdout_text.splitlines()[:2] == said
    listed = await containers_box.execute("ls /tmp/.golem-images.tar")
    assert listed.exit_code != 0  # the box's copy is gone
