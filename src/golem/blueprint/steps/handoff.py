"""Hand an opened pull request to a person: what ``escalate`` does once ship opened it (CI
still red after its rounds, a CI that never finished, a required check never created).

The pull request gets the escalation labels and a comment saying what still fails; the
issue is told where to look; the run ends ``escalated``. A forge call that fails is noted,
never the run's end: the pull request is open either way.
"""

from __future__ import annotations

from typing import Literal

from golem.blueprint.execution import Execution
from golem.blueprint.lifecycle import mark_concluded
from golem.blueprint.steps.ci_report import still_failing
from golem.core.errors import ForgeError

__all__ = ["hand_off"]


async def hand_off(ex: Execution) -> tuple[Literal["success", "failure"], str]:
    """Label the run's pull request for a person and say on it what still fails."""
    state = ex.state
    pr = state.pr
    assert pr is not None
    if state.status == "escalated":  # handed off before a resume: once is enough
        return "success", f"{pr.url} is a person's"
    labels = list(ex.config.forge.escalation_labels)
    if labels:
        try:
            state.pr = pr.model_copy(update={"labels": await ex.forge.add_labels(pr, labels)})
        except ForgeError as exc:
            ex.note(f"could not label the pull request: {exc.message}")
    why = ex.secrets.mask(still_failing(state))
    text = f"golem stops here: a person should take this pull request over.\n\n{why}"
    await ex.quietly(ex.forge.comment(pr.as_issue(), text), "comment on the pull request")
    if state.issue is not None:
        first = why.splitlines()[0].rstrip(":")
        note = f"golem opened {pr.url}, but it needs a person: {first}"
        await ex.quietly(ex.forge.comment(state.issue, note), "comment on the issue")
    mark_concluded(state, "escalated")
    ex.save()
    return "success", f"{pr.url} handed to a person"
