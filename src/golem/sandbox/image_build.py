"""Custom devbox images: a base image plus packages plus a setup script, built once.

``install`` entries are Debian packages (``git``), or ``pip:NAME`` / ``npm:NAME``. The image
carries a label with a content hash of the base image's id, the packages, the setup script
and golem's supervisor protocol; a build whose hash already exists is skipped (and only
tagged if the tag is new), so building on every start is cheap.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import posixpath
import shlex
import tarfile
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import DockerException
from docker.errors import ImageNotFound as DockerImageNotFound
from docker.utils import parse_repository_tag

from golem.core.config import ImageRecipe
from golem.core.errors import ImageNotFound, SandboxError
from golem.sandbox.images import HASH_LABEL
from golem.sandbox.network import SYSTEM_BUNDLE, TRUST_VARIABLES
from golem.sandbox.supervisor import PROTOCOL_VERSION

__all__ = ["BuildResult", "build_image", "recipe_hash", "recipe_script"]

RECIPE = 1
LOG_TAIL = 15
BUILD_BUNDLE = "/tmp/golem-host-ca.crt"


@dataclass(frozen=True)
class BuildResult:
    """The outcome of a build: the tag, the content hash, and whether it ran."""

    tag: str
    hash: str
    built: bool


def recipe_script(recipe: ImageRecipe) -> str:
    """The shell script that installs the packages and runs the setup, as root."""
    apt = [p for p in recipe.install if ":" not in p]
    pip = [p.removeprefix("pip:") for p in recipe.install if p.startswith("pip:")]
    npm = [p.removeprefix("npm:") for p in recipe.install if p.startswith("npm:")]
    unknown = [p for p in recipe.install if ":" in p and not p.startswith(("pip:", "npm:"))]
    if unknown:
        raise SandboxError(
            f"cannot install {', '.join(unknown)}: write Debian packages by name, or "
            "pip:NAME / npm:NAME"
        )
    lines = ["set -eu", "export DEBIAN_FRONTEND=noninteractive"]
    if apt:
        names = " ".join(shlex.quote(p) for p in apt)
        lines += [
            "apt-get update -qq",
            f"apt-get install -y -qq --no-install-recommends {names}",
            "rm -rf /var/lib/apt/lists/*",
        ]
    if pip:
        names = " ".join(shlex.quote(p) for p in pip)
        lines.append(f"python3 -m pip install --no-cache-dir --break-system-packages {names}")
    if npm:
        lines.append("npm install -g " + " ".join(shlex.quote(p) for p in npm))
    if recipe.setup:
        lines.append(recipe.setup)
    return "\n".join(lines) + "\n"


def recipe_hash(recipe: ImageRecipe, base_id: str) -> str:
    """Content hash of a recipe on a given base image."""
    material = {
        "base": base_id,
        "install": list(recipe.install),
        "setup": recipe.setup,
        "supervisor": PROTOCOL_VERSION,
        "recipe": RECIPE,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _trusting(script: str) -> str:
    """``script`` with the host's CA bundle named by the variables pip, npm, curl, git and
    Python read (a build behind a TLS-inspecting gateway trusts what the host trusts), and
    the bundle removed at its end. Exported by the script, not set on the container: a
    commit keeps a container's environment."""
    exports = "".join(f"export {name}={BUILD_BUNDLE}\n" for name in TRUST_VARIABLES)
    return exports + script + f"rm -f {BUILD_BUNDLE}\n"


def _tar_of(path: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo(posixpath.basename(path))
        info.size, info.mode = len(data), 0o644
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _build(client: docker.DockerClient, recipe: ImageRecipe) -> BuildResult:
    try:
        base = client.images.get(recipe.base)
    except DockerImageNotFound:
        raise ImageNotFound(
            f"base image {recipe.base!r} is not in the engine; `golem image bootstrap` "
            "builds golem's own from Debian's packages"
        ) from None
    digest = recipe_hash(recipe, base.id)
    existing = client.images.list(filters={"label": f"{HASH_LABEL}={digest}"})
    if existing:
        existing[0].tag(recipe.tag)
        return BuildResult(recipe.tag, digest, built=False)
    bundle = Path(SYSTEM_BUNDLE).read_bytes() if Path(SYSTEM_BUNDLE).is_file() else b""
    script = _trusting(recipe_script(recipe)) if bundle else recipe_script(recipe)
    container = client.containers.create(base.id, ["sh", "-c", script], user="0:0")
    try:
        if bundle:
            container.put_archive(posixpath.dirname(BUILD_BUNDLE), _tar_of(BUILD_BUNDLE, bundle))
        container.start()
        status = container.wait()
        if status.get("StatusCode") != 0:
            logs = container.logs(tail=LOG_TAIL).decode(errors="replace").strip()
            raise SandboxError(
                f"building {recipe.tag} failed (exit {status.get('StatusCode')}): {logs}"
            )
        repository, tag = parse_repository_tag(recipe.tag)
        inherited = {k: v for k, v in (base.labels or {}).items() if not k.startswith("golem.")}
        labels = {**inherited, HASH_LABEL: digest, "golem.base": recipe.base}
        container.commit(repository=repository, tag=tag or "latest", conf={"Labels": labels})
    finally:
        container.remove(force=True)
    return BuildResult(recipe.tag, digest, built=True)


async def build_image(client: docker.DockerClient, recipe: ImageRecipe) -> BuildResult:
    """Build ``recipe`` in the engine behind ``client`` unless its content hash exists."""
    try:
        return await asyncio.to_thread(_build, client, recipe)
    except DockerException as exc:
        explanation = getattr(exc, "explanation", None) or exc
        raise SandboxError(f"the engine could not build {recipe.tag}: {explanation}") from exc
