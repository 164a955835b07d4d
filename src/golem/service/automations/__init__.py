"""Automations: runs golem serve starts by itself, on a cron schedule in a time zone, on a
signed delivery to an automation's own webhook, or on a forge's event; each firing starts
one run at most, never while the automation's last run is still in progress."""

from golem.service.automations.events import (
    fire_event,
    github_failure,
    github_push,
    gitlab_failure,
    gitlab_push,
)
from golem.service.automations.firing import FireAnswer, Firings
from golem.service.automations.model import KIND, Automation, AutomationView
from golem.service.automations.scheduler import Scheduler
from golem.service.automations.views import next_run, view_of

__all__ = [
    "KIND",
    "Automation",
    "AutomationView",
    "FireAnswer",
    "Firings",
    "Scheduler",
    "fire_event",
    "github_failure",
    "github_push",
    "gitlab_failure",
    "gitlab_push",
    "next_run",
    "view_of",
]
