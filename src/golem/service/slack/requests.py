"""What a Slack mention asks golem to run: a new run with the thread as its task, or, in a
thread whose run opened a pull request, a follow-up of that run on its branch."""

from __future__ import annotations

from golem.blueprint import RunRequest, RunState
from golem.blueprint.state import FollowUp
from golem.core.masking import SecretMasker
from golem.core.slack_config import SlackConfig
from golem.service.slack.thread import ASKED, Ask

__all__ = ["run_request"]


def run_request(
    config: SlackConfig,
    user: str,
    ask: Ask,
    repo: str,
    latest: RunState | None,
    masker: SecretMasker,
    thread: str,
) -> RunRequest:
    """A new run with the thread as its task; or, in a thread whose run opened a pull
    request, a follow-up of that run on its branch."""
    words = masker.mask_text(ask.text)
    if (
        latest is not None
        and latest.pr is not None
        and not (ask.repo and latest.request.repo != repo)
    ):
        request = f"{words or ASKED}\n\nThe Slack thread it was asked in:\n\n{thread}"
        follow = FollowUp(
            repo=latest.pr.repo,
            number=latest.pr.number,
            parent_run=latest.id,
            requested_by=f"slack:{user}",
            request=request,
        )
        return RunRequest(
            repo=latest.request.repo,
            forge=latest.request.forge,
            follow_up=follow,
            blueprint=config.follow_up_blueprint,
            model=config.model,
            budget_usd=config.budget_usd,
        )
    task = f"{words or ASKED}\n\nAsked in Slack, in this thread (oldest first):\n\n{thread}"
    return RunRequest(
        repo=repo,
        task=task,
        blueprint=config.blueprint,
        model=config.model,
        forge=config.forge,
        budget_usd=config.budget_usd,
    )
