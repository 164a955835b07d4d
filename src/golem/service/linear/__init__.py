"""Linear: issues assigned to golem's user, labelled for it or mentioning it (or agent
sessions created for it) start runs; golem answers on the issue, through one status
comment kept up to date (``golem.service.sources.StatusKeeper``) or the session's
activities, and moves the issue through its team's workflow."""

from golem.service.linear.client import LinearClient, LinearIssue
from golem.service.linear.deliveries import LinearCall, read_delivery
from golem.service.linear.reporter import LinearReporter, LinearThread
from golem.service.linear.trigger import LinearTrigger

__all__ = [
    "LinearCall",
    "LinearClient",
    "LinearIssue",
    "LinearReporter",
    "LinearThread",
    "LinearTrigger",
    "read_delivery",
]
