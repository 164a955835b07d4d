"""A PostgreSQL image for tests, made without any registry: ``golem-test/postgres``, built
from Debian's ``postgresql`` package (mmdebstrap, like golem's own images), imported into
the host's docker once per content hash, saved there, and seeded into a tenant's image
cache under the tag a repository's CI names (``postgres:16``), so that a run whose CI
declares ``services: postgres: image: postgres:16`` loads it into its box's engine.

It behaves as the official image does for what CI files use: ``POSTGRES_USER`` (postgres),
``POSTGRES_PASSWORD`` (then password authentication over TCP; none: trust) and
``POSTGRES_DB`` (the user's name), listening on 127.0.0.1:5432 (its container shares the
box's network). Debian's bookworm has PostgreSQL 15: the tag is the CI's, the server is 15.

It carries only the files its server and entrypoint run (``SERVER_TREES`` and the shared
libraries ``ldd`` names for them): a box under emulation loads the image whole, at about
half a second per MB. Its cluster is made when the image is (initdb on the host, natively, with
1 MB WAL segments); a container's first start only applies that environment in one
single-user session, so that a service under emulation is ready in seconds, not after
initdb's minutes.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from golem.blueprint.dependencies import DependencyCache
from golem.blueprint.images import image_keys
from golem.checks import RepoConventions
from golem.core import GolemConfig
from golem.core.config import default_state_dir
from golem.sandbox import KeptImages, keep_image_archive
from golem.sandbox.limits import TakebackLimits

__all__ = ["POSTGRES_TAG", "postgres_archive", "seed_postgres"]

POSTGRES_TAG = "postgres:16"
IMAGE = "golem-test/postgres"
RECIPE = 3  # bump when the way the image is made changes
PACKAGES = ["postgresql"]
BIN = "/usr/lib/postgresql/15/bin"
DATA = "/var/lib/postgresql/data"
INITDB = f"""set -e
mkdir -p {DATA} /run/postgresql
chown postgres:postgres {DATA} /run/postgresql
runuser -u postgres -- {BIN}/initdb -D {DATA} -U postgres --encoding=UTF8 --locale=C.UTF-8 \\
    --auth-local=trust --auth-host=trust --wal-segsize=1 --no-sync >/dev/null
"""
"""Run once when the image is made, on the host (natively, in seconds): the cluster a
container starts from, so that no container runs initdb (minutes under emulation)."""
ENTRYPOINT = f"""#!/bin/sh
set -e
user="${{POSTGRES_USER:-postgres}}"
db="${{POSTGRES_DB:-$user}}"
password="${{POSTGRES_PASSWORD:-}}"
data={DATA}
mkdir -p /run/postgresql && chown postgres:postgres /run/postgresql
if [ ! -e /var/lib/postgresql/configured ]; then
    auth=trust
    [ -n "$password" ] && auth=scram-sha-256
    printf 'local all all trust\\nhost all all 127.0.0.1/32 %s\\nhost all all ::1/128 %s\\n' \\
        "$auth" "$auth" >"$data/pg_hba.conf"
    role=$(printf '%s' "$user" | sed 's/"/""/g')
    {{
        [ "$user" = postgres ] || echo "CREATE ROLE \\"$role\\" SUPERUSER LOGIN"
        [ -z "$password" ] ||
            echo "ALTER ROLE \\"$role\\" PASSWORD '$(printf '%s' "$password" | sed "s/'/''/g")'"
        [ "$db" = postgres ] ||
            echo "CREATE DATABASE \\"$(printf '%s' "$db" | sed 's/"/""/g')\\" OWNER \\"$role\\""
    }} | runuser -u postgres -- {BIN}/postgres --single -D "$data" postgres >/dev/null
    touch /var/lib/postgresql/configured
fi
exec runuser -u postgres -- {BIN}/postgres -D "$data" -c listen_addresses=127.0.0.1 \\
    -c port=5432 -c jit=off
"""
"""At a container's first start, the environment applied to the ready cluster in one
single-user session (a role, its password, a database: under a second of work)."""
LEFT_OUT = (
    "usr/share/doc/",
    "usr/share/man/",
    "usr/share/locale/",
    "usr/share/i18n/",
    "usr/share/info/",
    "usr/share/perl/",
    "usr/lib/x86_64-linux-gnu/perl/",
    "usr/lib/x86_64-linux-gnu/perl-base/",
    "usr/lib/apt/",
    "var/cache/apt/",
    "var/cache/debconf/",
    "var/lib/apt/lists/",
    "var/lib/dpkg/",
    "usr/lib/postgresql/15/lib/bitcode/",
    "usr/lib/postgresql/15/lib/llvmjit",
    "usr/lib/x86_64-linux-gnu/libLLVM",
    "usr/lib/x86_64-linux-gnu/libz3",
    "var/lib/postgresql/",
    "etc/postgresql/15/",
)
"""What a server needs not (docs, locales, perl, apt's and dpkg's state, the JIT, which is
off, and the cluster Debian's package made): left out of the root file system the cluster
is made in (then only ``SERVER_TREES`` and what ``NEEDED`` names are kept). Debian's
``psql`` and ``pg_isready`` are perl wrappers: the image links the binaries themselves into
/usr/local/bin, first on a container's PATH."""
CLIENTS = ("psql", "pg_isready", "createdb", "dropdb", "pg_dump")
TOOLS = ("/bin/sh", "/usr/bin/bash", "/usr/bin/env", "/usr/bin/mkdir", "/usr/bin/chown")
TOOLS += ("/usr/bin/chmod", "/usr/bin/sed", "/usr/bin/touch", "/usr/bin/cat", "/usr/bin/ls")
TOOLS += ("/usr/bin/rm", "/usr/bin/id", "/usr/bin/sleep", "/usr/bin/true", "/usr/sbin/runuser")
"""The programs the entrypoint and a container's shell use, beside PostgreSQL's own."""
NEEDED = f"""set -e
elves=$(find /usr/lib/postgresql /usr/lib/x86_64-linux-gnu/security -type f)
for f in {" ".join(TOOLS)} $elves; do ldd "$f" 2>/dev/null || true; done |
    awk '$2 == "=>" && $3 ~ /^\\// {{ print $3 }} $1 ~ /^\\// {{ print $1 }}' | sort -u |
    while read -r lib; do readlink -f "$lib"; done
for f in {" ".join(TOOLS)}; do readlink -f "$f"; done
"""
"""Run in the image as it is made: the files of ``TOOLS`` and the shared libraries they,
PostgreSQL's programs and modules and PAM's modules (``runuser``) load, one a line."""
SERVER_TREES = (
    "etc/",
    "var/",
    "run/",
    "tmp/",
    "usr/local/",
    "usr/lib/postgresql/",
    "usr/share/postgresql/",
    "usr/share/zoneinfo/",
    "usr/lib/locale/",
    "usr/lib/x86_64-linux-gnu/security/",
)
"""Kept whole (the cluster, the configuration, PostgreSQL's programs, modules and data,
time zones, the C.UTF-8 locale, PAM's modules); of the rest of the root file system only
the files ``NEEDED`` names: no iconv modules, perl, apt or tools nothing runs
(docs/sandbox.md: where a load's time goes)."""
NOT_NEEDED = ("usr/share/zoneinfo/right/",)
"""Leap-second time zones, which nothing here names."""


def content_hash() -> str:
    recipe = {
        "packages": PACKAGES,
        "initdb": INITDB,
        "entrypoint": ENTRYPOINT,
        "left_out": LEFT_OUT,
        "clients": CLIENTS,
        "needed": NEEDED,
        "server": [SERVER_TREES, NOT_NEEDED],
        "recipe": RECIPE,
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


@functools.cache
def postgres_archive() -> Path:
    """``docker save`` of the image, tagged ``POSTGRES_TAG`` (built and saved once per
    content hash, kept where golem keeps its bootstrapped images)."""
    digest = content_hash()
    archive = default_state_dir() / "images" / f"golem-test-postgres-{digest[:12]}.tar"
    if archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    tag = f"{IMAGE}:{digest[:12]}"
    if not _docker("image", "ls", "-q", tag).strip():
        _build(tag)
    with tempfile.TemporaryDirectory(dir=archive.parent) as scratch:
        saved = Path(scratch) / "saved.tar"
        _docker("save", "-o", str(saved), tag)
        retagged = Path(scratch) / "retagged.tar"
        _retag(saved, retagged, POSTGRES_TAG)
        retagged.replace(archive)
    return archive


def _build(tag: str) -> None:
    mmdebstrap = shutil.which("mmdebstrap")
    assert mmdebstrap is not None, "mmdebstrap is needed: scripts/setup installs it"
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "root.tar"
        argv = [mmdebstrap, "--quiet", "--variant=minbase", f"--include={','.join(PACKAGES)}"]
        subprocess.run([*argv, "bookworm", str(root)], check=True, capture_output=True)
        image = Path(scratch) / "image.tar"
        _image_tree(root, image)
        base = f"{tag}-base"
        _docker("import", str(image), base)
        container = f"golem-test-postgres-initdb-{tag.rsplit(':', 1)[1]}"
        try:
            _docker("run", "--name", container, "--entrypoint", "sh", base, "-c", INITDB)
            flat = Path(scratch) / "flat.tar"
            _docker("export", "-o", str(flat), container)
            needed = _docker("run", "--rm", "--entrypoint", "sh", base, "-c", NEEDED)
            server = Path(scratch) / "server.tar"
            _server_tree(flat, server, {line.lstrip("/") for line in needed.split()})
        finally:
            subprocess.run(["docker", "rm", "-f", container], check=False, capture_output=True)
            subprocess.run(["docker", "image", "rm", base], check=False, capture_output=True)
        changes = ['ENTRYPOINT ["/usr/local/bin/golem-postgres"]', "EXPOSE 5432"]
        argv = ["import", *(f"--change={change}" for change in changes), str(server), tag]
        _docker(*argv)


def _image_tree(root: Path, image: Path) -> None:
    """The root file system without ``LEFT_OUT``, with the entrypoint."""
    with tarfile.open(root) as source, tarfile.open(image, "w") as out:
        for member in source:
            name = member.name.removeprefix("./")
            if any(name.startswith(prefix) for prefix in LEFT_OUT):
                continue
            out.addfile(member, source.extractfile(member) if member.isreg() else None)
        for client in CLIENTS:
            link = tarfile.TarInfo(f"usr/local/bin/{client}")
            link.type, link.linkname = tarfile.SYMTYPE, f"{BIN}/{client}"
            out.addfile(link)
        script = ENTRYPOINT.encode()
        info = tarfile.TarInfo("usr/local/bin/golem-postgres")
        info.size, info.mode = len(script), 0o755
        out.addfile(info, io.BytesIO(script))


def _server_tree(flat: Path, server: Path, needed: set[str]) -> None:
    """The exported container's tree with only what the server needs: ``SERVER_TREES``
    and ``needed`` (``NEEDED``'s answer), every directory and symbolic link (a link to a
    file left out dangles, unused), a hard link when its target is kept."""
    kept: set[str] = set()
    with tarfile.open(flat) as source, tarfile.open(server, "w") as out:
        for member in source:
            name = member.name.removeprefix("./")
            if name.startswith(NOT_NEEDED):
                continue
            if member.islnk():
                keep = member.linkname.removeprefix("./") in kept
            elif member.isreg():
                keep = name in needed or name.startswith(SERVER_TREES)
            else:
                keep = True
            if keep:
                kept.add(name)
                out.addfile(member, source.extractfile(member) if member.isreg() else None)


def _retag(saved: Path, out_path: Path, tag: str) -> None:
    """The saved archive with its manifest naming ``tag`` (the legacy ``repositories``
    file, which ``docker load`` does not need beside a manifest, left out)."""
    with tarfile.open(saved) as source, tarfile.open(out_path, "w") as out:
        for member in source:
            if member.name == "repositories":
                continue
            data = source.extractfile(member) if member.isreg() else None
            if member.name == "manifest.json" and data is not None:
                document = json.loads(data.read())
                for image in document:
                    image["RepoTags"] = [tag]
                body = json.dumps(document).encode()
                member.size, data = len(body), io.BytesIO(body)
            out.addfile(member, data)


def _docker(*args: str) -> str:
    done = subprocess.run(["docker", *args], check=True, capture_output=True, text=True)
    return done.stdout


async def _chunks(path: Path) -> AsyncIterator[bytes]:
    with path.open("rb") as handle:
        while data := handle.read(1024 * 1024):
            yield data


async def seed_postgres(
    config: GolemConfig,
    workspace: Path,
    conventions: RepoConventions,
    *,
    tenant: str,
    repo: str,
    image: str,
    base: str = "main",
) -> tuple[str, KeptImages]:
    """Seed the image cache entry a run on ``workspace`` (a clone whose CI declares the
    ``POSTGRES_TAG`` service) reads with the PostgreSQL image, through the same check a
    box's archive passes; its key and what was kept."""
    keys = image_keys(workspace, conventions, tenant=tenant, repo=repo, image=image, base=base)
    archive = postgres_archive()
    limits = TakebackLimits(max_file_bytes=2 * 1024**3, max_bytes=4 * 1024**3)
    cache = DependencyCache(config)
    kept = await keep_image_archive(_chunks(archive), cache.path(keys.write), limits)
    return keys.write, kept
