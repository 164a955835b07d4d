"""The agent's system prompt and the messages the loop adds on its own."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["NUDGE", "Verification", "command_line", "system_prompt", "task_message"]

SYSTEM = """\
You are golem, an autonomous coding agent. You work alone and unattended: nobody will \
answer questions or approve steps, so decide and act.

You work in an isolated Linux sandbox; every tool runs there, never on anyone's machine. \
The working directory is {workdir}.{network}

How to work:
- Explore before you edit: read the relevant files, search with grep and glob.
- Make the smallest change that fully solves the task. Follow the repository's \
conventions and the rules given below.
- {verify}
- Do not commit, push or create branches; golem does that after it has verified your work.
- When you are done, call finish with a short summary of what you changed and why. If you \
cannot finish, call finish and say what blocks you.
"""

NUDGE = (
    "You replied without calling a tool. If the task is complete, call finish with a "
    "summary; otherwise go on with the tools."
)

NETWORK = {
    "none": "The sandbox has no network: nothing can be downloaded or installed.",
    "filtered": "The sandbox's network is filtered: only the hosts its policy allows answer.",
    "host": "The sandbox has the host's network.",
}


def command_line(name: str, command: str) -> str:
    """A check as a markdown list item: ``- test: `pytest -q` ``, or ``- `make check` ``
    for a blueprint's own command (named by itself)."""
    return f"- `{command}`" if name == command else f"- {name}: `{command}`"


@dataclass(frozen=True)
class Verification:
    """What verifies the agent's work once it finishes, as the run knows it: the commands
    (check name, command), where they run, and what the box has ready for them."""

    commands: list[tuple[str, str]]
    workdir: str = "/workspace"
    installed_by: list[str] = field(default_factory=list)
    """The commands that installed the dependencies before the agent started."""
    installed_into: list[str] = field(default_factory=list)
    """Where they went: relative to the repository (node_modules), or golem's home outside
    it (/tmp/golem/venv)."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables set for every command of the box (a virtual environment's PATH)."""
    network: str = "none"
    already_failing: list[tuple[str, str]] = field(default_factory=list)
    """Commands that fail on the base commit too: not held against the change."""
    services: list[str] = field(default_factory=list)
    """The services running beside the checks in the sandbox's container engine, each as
    how to reach it ("postgres (postgres:16): localhost:5432")."""

    def render(self) -> str:
        """The prompt's "How your change is verified" section (markdown)."""
        if not self.commands:
            return _render_unverified(self)
        lines = [
            "# How your change is verified",
            "",
            f"When you finish, golem runs these commands in this sandbox, in {self.workdir}, "
            "and your change ships only if they pass:",
            "",
            *[command_line(name, command) for name, command in self.commands],
            "",
            "Run them yourself (with bash) before you finish. If the repository's rules or "
            "documentation ask you to run a tool this sandbox does not have (tox, nox, a "
            "pre-commit hook, docker), do not try to install it: these commands are what "
            "counts, run them instead.",
        ]
        if self.already_failing:
            lines += [
                "",
                "These fail on the base commit too, before any change. A failure in a test "
                "your task names or your change touches, or one your change made pass in "
                "part, is yours to fix; the others are not held against you, but do not "
                "make them worse:",
                "",
                *[command_line(name, command) for name, command in self.already_failing],
            ]
        return "\n".join([*lines, "", _environment(self)]) + "\n"


def _render_unverified(verification: Verification) -> str:
    lines = [
        "# How your change is verified",
        "",
        "golem found no command that verifies this repository (no test, lint or build "
        "command it recognises), so nothing checks your change after you finish. Verify "
        "it yourself: find the tests (test files, a test runner, the README's or the CI's "
        "instructions) and run them in this sandbox, or run the code you changed, before "
        "you finish; say in your summary what you ran and what it showed. The pull request "
        "will say that no check verified it.",
    ]
    return "\n".join([*lines, "", _environment(verification)]) + "\n"


def _environment(verification: Verification) -> str:
    """What the sandbox has ready: the installed dependencies, the variables, the network."""
    paragraphs: list[str] = []
    if verification.installed_by:
        where = ", ".join(verification.installed_into)
        commands = "; ".join(f"`{command}`" for command in verification.installed_by)
        into = f" into {where}" if where else ""
        paragraphs.append(
            f"The dependencies are installed{into} (by {commands}, before you started): "
            "use them; do not install them again."
        )
    if verification.services:
        running = [f"- {service}" for service in verification.services]
        paragraphs.append(
            "\n".join(
                [
                    "These services run in this sandbox's own container engine, as the "
                    "repository's CI declares them, for you and for the checks (their "
                    "containers share the sandbox's network: reach them on localhost):",
                    *running,
                ]
            )
        )
    if verification.env:
        variables = [f"- `{name}={value}`" for name, value in sorted(verification.env.items())]
        paragraphs.append("\n".join(["Every command runs with these variables set:", *variables]))
    paragraphs.append(NETWORK.get(verification.network, NETWORK["none"]))
    return "\n\n".join(paragraphs)


def system_prompt(workdir: str, context: str = "", verification: Verification | None = None) -> str:
    """The system prompt for a box whose working directory is ``workdir``: how to work, how
    the work is verified (when the run knows it), then the hydrated context (rule files,
    the issue, relevant files), if any."""
    if verification is None:
        network = " The sandbox may have no network."
        verify = "Verify your change: run the project's tests or checks with bash when you can."
    else:
        network = ""  # the section says what the network is
        verify = 'Verify your change as "How your change is verified" below says.'
    prompt = SYSTEM.format(workdir=workdir, network=network, verify=verify)
    if verification is not None:
        prompt += "\n" + verification.render()
    if context.strip():
        prompt += "\n# Context\n\n" + context.strip() + "\n"
    return prompt


def task_message(task: str) -> str:
    """The first user message."""
    return f"# Task\n\n{task.strip()}\n"
