"""Runs started from outside the API: a forge's webhooks (an issue labelled for golem, a
comment that mentions it, a review on a pull request golem opened) start a run, or a
follow-up run on the pull request, and report on it there."""

from golem.service.trigger.calls import Call, Ignored, IssueCall, ReviewCall
from golem.service.trigger.runs import Trigger, TriggerAnswer

__all__ = ["Call", "Ignored", "IssueCall", "ReviewCall", "Trigger", "TriggerAnswer"]
