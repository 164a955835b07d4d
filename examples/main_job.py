"""golem's main job on its embedded defaults: a task in, a pull request out.

Makes a git repository of examples/calculator (whose tests fail), served as a bare
repository the way a forge would serve it, then runs

    golem run --repo <it> --task "..." --model scripted:examples/calculator-fix.yaml

with the local forge, and shows the pull request it opened. The scripted model stands in
for an LLM (set --model anthropic/claude-opus-4-5 and ANTHROPIC_API_KEY for a real one).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent
GOLEM = [sys.executable, "-m", "golem"]
TASK = "Fix the failing tests of the calculator: add() gives wrong results."


def git(*args: str, cwd: Path) -> None:
    """Run git quietly, as a person setting up a repository would."""
    identity = ["-c", "user.name=golem example", "-c", "user.email=example@golem.invalid"]
    subprocess.run(["git", *identity, *args], cwd=cwd, check=True, capture_output=True)


def make_remote(scratch: Path) -> Path:
    """examples/calculator as a bare repository with one commit on main."""
    work = scratch / "calculator"
    shutil.copytree(EXAMPLES / "calculator", work)
    git("init", "-q", "-b", "main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "calculator: a sample repository whose tests fail", cwd=work)
    remote = scratch / "calculator.git"
    git("clone", "-q", "--bare", str(work), str(remote), cwd=scratch)
    return remote


def main() -> int:
    """Run the main job; exits with golem run's exit code."""
    scratch = Path(tempfile.mkdtemp(prefix="golem-example-"))
    scratch.chmod(0o755)
    remote = make_remote(scratch)
    model = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
    run = [*GOLEM, "run", "--repo", str(remote), "--task", TASK, "--model", model]
    print(f"$ golem run --repo {remote} --task {TASK!r} --model {model}", flush=True)
    code = subprocess.run(run, check=False).returncode
    if code == 0:
        print("\n$ golem prs show 1 --repo " + str(remote), flush=True)
        subprocess.run([*GOLEM, "prs", "show", "1", "--repo", str(remote)], check=False)
    return code


if __name__ == "__main__":
    sys.exit(main())
