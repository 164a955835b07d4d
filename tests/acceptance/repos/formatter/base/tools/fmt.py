"""The repository's formatter: strips trailing whitespace from every Python file."""

import pathlib

for path in pathlib.Path(".").rglob("*.py"):
    if ".venv" in path.parts:
        continue
    text = path.read_text()
    tidy = "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
    if tidy != text:
        path.write_text(tidy)
        print(f"formatted {path}")
