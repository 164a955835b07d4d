"""Runs started from outside the API: GitHub's webhooks (an issue labelled for golem, or a
comment that mentions it) start a run for the issue and report on it there."""

from golem.service.trigger.events import Ignored, IssueCall, read_delivery
from golem.service.trigger.runs import GitHubTrigger, TriggerAnswer

__all__ = ["GitHubTrigger", "Ignored", "IssueCall", "TriggerAnswer", "read_delivery"]
