"""golem.testing: the fakes golem's own tests use, shipped for teams that test their
blueprints, agents and integrations without a hosted API (docs/testing.md).

Each speaks the real wire protocol of what it stands for, on a loopback port, so the code
under test runs through its real client (the official SDKs, httpx, git):

- ``golem.testing.anthropic_server`` / ``openai_server``: model providers (Messages and
  Chat Completions, streamed as the providers stream); ``golem.testing.models`` points
  golem's ``[models]`` at them.
- ``golem.testing.github_server`` / ``gitlab_server`` (with their App, OAuth, CI and review
  endpoints) and ``git_http_server``: forges, their REST APIs and git over smart HTTP.
- ``golem.testing.slack_server`` / ``linear_server``: Slack's Web API and Linear's GraphQL.
- ``golem.testing.wire``: the server they are built on (routes, scripted replies, every
  request recorded), for another API.
- ``golem.testing.events``: ``EventCapture``, an event sink that keeps what it is given.

The scripted model (``scripted:PATH``, ``golem.agent.models.ScriptedModel``) and the in-memory
store (``golem.store.MemoryStore``) are golem's own, where they always were.
"""

from golem.testing.events import EventCapture

__all__ = ["EventCapture"]
