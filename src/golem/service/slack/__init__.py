"""Slack: golem's Slack app. Mentions and ``/golem`` start runs whose task is the thread
they were asked in, reported there in one status message kept up to date and a reply at
the end; a later mention in the thread follows up on the same branch; the status message's
buttons answer a gate or cancel the run (docs/slack.md)."""

from golem.service.slack.trigger import SlackAnswer, SlackTrigger

__all__ = ["SlackAnswer", "SlackTrigger"]
