"""The images a box's private engine holds, saved to the host and loaded into another box.

``save_images`` runs ``docker save`` in the box for every tagged image but golem's own
(``golem/busybox``), rewrites the stream there (``NORMALISE``: ``docker save`` writes a
layer it already wrote under another id as a symlink to it; the box drops such links and
points the manifest at the file itself, so the host needs no link at all), and hands the
file to ``keep_image_archive``, which checks it as strictly as any takeback. ``load_images``
streams a kept archive into the box's ``docker load`` on its stdin: nothing of it is
unpacked anywhere but in the guest's engine.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterable
from pathlib import Path

from golem.core.errors import SandboxError
from golem.core.events import ExitEvent, OutputEvent
from golem.sandbox.containers import GOLEM_IMAGES
from golem.sandbox.contracts import Box
from golem.sandbox.image_archive import KeptImages, keep_image_archive
from golem.sandbox.limits import TakebackLimits
from golem.sandbox.models import ExecRequest

__all__ = ["NORMALISE", "SAVED", "engine_images", "load_images", "save_images"]

SAVED = "/tmp/.golem-images.tar"
"""Where the box writes the archive it hands back (removed once it is kept, or not)."""
SAVE_TIMEOUT = 1800
NORMALISE = r"""
import io, json, posixpath, sys, tarfile
def norm(name):
    return posixpath.normpath(name).lstrip("/")
source = tarfile.open(fileobj=sys.stdin.buffer, mode="r|")
out = tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.PAX_FORMAT)
links, manifest = {}, None
for member in source:
    name = norm(member.name)
    if name == "manifest.json":
        manifest = source.extractfile(member).read()
    elif member.issym():
        links[name] = norm(posixpath.join(posixpath.dirname(name), member.linkname))
    elif member.islnk():
        links[name] = norm(member.linkname)
    elif member.isreg() or member.isdir():
        member.name, member.mode = name, member.mode & 0o777
        out.addfile(member, source.extractfile(member) if member.isreg() else None)
def resolve(name):
    name = norm(name)
    for _ in range(64):
        if name not in links:
            break
        name = links[name]
    return name
images = json.loads(manifest)
for image in images:
    image["Config"] = resolve(image["Config"])
    image["Layers"] = [resolve(layer) for layer in image["Layers"]]
body = json.dumps(images).encode()
info = tarfile.TarInfo("manifest.json")
info.size, info.mode = len(body), 0o644
out.addfile(info, io.BytesIO(body))
out.close()
"""
"""A ``docker save`` stream on stdin, its links replaced by the manifest naming their
targets, on stdout."""


async def engine_images(box: Box) -> list[str]:
    """The tagged images the box's engine holds, golem's own left out."""
    listed = await box.execute(
        ExecRequest(
            cmd=["docker", "image", "ls", "--format", "{{.Repository}}:{{.Tag}}"], timeout=120
        )
    )
    if listed.exit_code != 0:
        raise SandboxError(
            f"could not list the box's images: {listed.stderr_text.strip()[-300:]}; check the "
            "box's engine (/run/golem-engine.log in the box)"
        )
    names = listed.stdout_text.split()
    return sorted({name for name in names if "<none>" not in name and name not in GOLEM_IMAGES})


async def save_images(
    box: Box, destination: Path, limits: TakebackLimits, images: list[str]
) -> KeptImages:
    """``images`` of the box's engine, saved, normalised in the box and kept at
    ``destination`` by ``keep_image_archive``'s rules (``UnsafeBoxOutput`` otherwise)."""
    script = f'set -o pipefail; docker save "$@" | python3 -c {shlex.quote(NORMALISE)} > {SAVED}'
    try:
        saved = await box.execute(
            ExecRequest(cmd=["bash", "-c", script, "bash", *images], timeout=SAVE_TIMEOUT)
        )
        if saved.exit_code != 0:
            raise SandboxError(
                f"docker save of {', '.join(images)} failed in the box: "
                f"{saved.stderr_text.strip()[-300:]}"
            )
        return await keep_image_archive(box.stream_file(SAVED), destination, limits)
    finally:
        await box.execute(ExecRequest(cmd=["rm", "-f", SAVED], timeout=60))


async def load_images(box: Box, chunks: AsyncIterable[bytes]) -> str:
    """A kept archive's images loaded into the box's engine, streamed to ``docker load``'s
    stdin; what it said (``Loaded image: ...``)."""
    async with box.interact(
        ExecRequest(cmd=["docker", "load"], timeout=SAVE_TIMEOUT)
    ) as interaction:
        async for chunk in chunks:
            await interaction.write(chunk)
        await interaction.close_stdin()
        output = bytearray()
        code: int | None = None
        async for event in interaction.events():
            if isinstance(event, OutputEvent):
                output += event.data
            elif isinstance(event, ExitEvent):
                code = event.exit_code
    said = output.decode(errors="replace").strip()
    if code != 0:
        raise SandboxError(f"docker load failed in the box: {said[-300:]}")
    return said
