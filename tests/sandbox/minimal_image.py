"""Builds a tiny root file system (python3 + sh, nothing else) from the host's own files.

It serves the tests of image directories: a box whose image lacks node and bash.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

SKIP_STDLIB = shutil.ignore_patterns(
    "test",
    "tests",
    "__pycache__",
    "idlelib",
    "tkinter",
    "ensurepip",
    "lib2to3",
    "turtledemo",
    "site-packages",
    "dist-packages",
)


def _libraries(binaries: list[Path]) -> set[Path]:
    found: set[Path] = set()
    for binary in binaries:
        output = subprocess.run(
            ["ldd", str(binary)], capture_output=True, text=True, check=True
        ).stdout
        for line in output.splitlines():
            parts = line.split()
            path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
            if path.startswith("/"):
                found.add(Path(path))
    return found


def _copy(source: Path, root: Path) -> None:
    target = root / source.relative_to("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source.resolve(), target)


def build_minimal_image(root: Path) -> Path:
    """Create the image under ``root`` and return it."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    python = Path(f"/usr/bin/{version}")
    stdlib = Path(f"/usr/lib/{version}")
    dash = Path("/usr/bin/dash")
    for directory in ("proc", "dev", "tmp", "workspace", "usr/bin", "etc"):
        (root / directory).mkdir(parents=True, exist_ok=True)
    shutil.copytree(stdlib, root / stdlib.relative_to("/"), ignore=SKIP_STDLIB)
    extensions = list((stdlib / "lib-dynload").glob("*.so"))
    for source in [python, dash, *_libraries([python, dash, *extensions])]:
        _copy(source, root)
    (root / "usr/bin/python3").symlink_to(version)
    (root / "usr/bin/sh").symlink_to("dash")
    for name in ("bin", "lib", "lib64"):
        if not (root / name).exists():
            (root / name).symlink_to(f"usr/{name}")
    return root
