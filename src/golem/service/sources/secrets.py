"""The secrets a source's messages are masked with: whatever the server knows that a run's
report, a thread or an error could carry (the tenant's forge tokens and the server's own,
the model providers' keys, the brokered credentials' values, the source's own token and
signing secret). The run's own outputs are masked by the run already; this is the second
mask, at the last step before a message leaves golem."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

from golem.blueprint.secrets import RunSecrets
from golem.core.errors import GolemError
from golem.service.state import ServerState

__all__ = ["known_secrets"]


async def known_secrets(
    state: ServerState, tenant: str | None, own: Iterable[str] = ()
) -> list[str]:
    """Every secret a message about ``tenant``'s run could show (None: no tenant's, for
    someone golem does not know), and ``own`` (the source's)."""
    config = state.config
    tokens = [value for value in own if value]
    for section in (config.forge.github, config.forge.gitlab):
        token = section.token()
        if token:
            tokens.append(token)
    if tenant is not None:
        with contextlib.suppress(GolemError):  # none, or the store away: none of theirs shown
            tokens += (await state.forge_access.for_tenant(tenant)).secrets()
    models = config.models
    for provider in (models.anthropic, models.openai, models.openai_compatible):
        key = os.environ.get(provider.api_key_env)
        if key:
            tokens.append(key)
    return RunSecrets.gather([], config.credentials, tokens).values
