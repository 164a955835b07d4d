"""One limiter per provider and key, through the real SDKs against the providers' wire
servers: the provider's retry-after and rate-limit headers hold the calls of its key
(each wait said, with its header), and a call that would wait past ``unavailable_after`` gives up
saying when the provider expects to be back. (The limiter shared by processes on one
store: tests/store/test_provider_limits.py.)"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from golem.agent import Message, ModelRequest
from golem.agent.contracts import ProviderWait
from golem.agent.models import make_model
from golem.core.errors import ModelRateLimited, ModelUnavailable
from golem.core.model_config import ModelsConfig
from golem.testing import anthropic_server as anthropic_wire
from golem.testing import openai_server as openai_wire
from golem.testing.models import WireServer, models_config
from golem.testing.wire import Reply
from tests.agent.pressure import Dialect, anthropic_dialect, openai_dialect

ASK = ModelRequest(system="You fix bugs.", messages=[Message(role="user", content="Fix it.")])


@dataclass(frozen=True)
class Provider:
    """A provider's wire server and how to speak it."""

    server: WireServer
    dialect: Dialect
    model: str
    ok: Callable[[], Reply]
    config: Callable[..., ModelsConfig]


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> Provider:
    if request.param == "anthropic":
        server = request.getfixturevalue("anthropic_server")
        return Provider(
            server, anthropic_dialect(), "anthropic/claude-haiku-4-5",
            lambda: anthropic_wire.stream_reply(anthropic_wire.Text("ok")),
            lambda **kw: models_config(anthropic=server, **kw),
        )  # fmt: skip
    server = request.getfixturevalue("openai_server")
    return Provider(
        server, openai_dialect(), "openai/gpt-5-mini", lambda: openai_wire.stream_reply("ok"),
        lambda **kw: models_config(openai=server, **kw),
    )  # fmt: skip


def with_headers(reply: Reply, headers: dict[str, str]) -> Reply:
    return Reply(
        status=reply.status, headers={**reply.headers, **headers}, body=reply.body,
        events=reply.events,
    )  # fmt: skip


async def test_retry_after_holds_the_call_and_the_wait_says_which_header_asked_for_it(
    provider: Provider,
) -> None:
    provider.server.push(provider.dialect.refused({"retry-after-ms": "300"}), provider.ok())
    model = make_model(provider.model, provider.config())
    waits: list[ProviderWait] = []

    response = await model.complete(ASK, None, waits.append)

    assert response.message.content == "ok"
    first, second = provider.server.requests
    assert second.json == first.json  # the SDK did not retry it: golem did, once
    assert [wait.header for wait in waits] == ["retry-after-ms: 300"]
    assert "429" in waits[0].reason
    assert waits[0].seconds >= 0.3
    assert second.received_at - first.received_at >= 0.3


async def test_a_spent_request_quota_holds_the_next_call_until_its_reset(
    provider: Provider,
) -> None:
    def spent(_: object) -> Reply:  # the quota resets 1.5 s after the answer, however late
        now = time.time()
        return with_headers(provider.ok(), provider.dialect.headers(5, 0, now + 1.5, now))

    provider.server.push(spent, provider.ok())
    model = make_model(provider.model, provider.config())
    waits: list[ProviderWait] = []

    await model.complete(ASK, None, waits.append)
    await model.complete(ASK, None, waits.append)

    remaining = next(name for name in spent(None).headers if "remaining" in name)
    assert [wait.header for wait in waits] == [f"{remaining}: 0"]
    first, second = provider.server.requests
    assert second.received_at - first.received_at >= 0.3


async def test_a_call_that_would_wait_past_unavailable_after_gives_up_saying_when_it_is_back(
    provider: Provider,
) -> None:
    provider.server.otherwise(provider.dialect.down({"retry-after": "3600"}))
    config = provider.config()
    config.unavailable_after = 5

    with pytest.raises(ModelUnavailable, match="overloaded") as raised:
        await make_model(provider.model, config).complete(ASK)

    assert len(provider.server.requests) == 1  # it did not hammer a provider that is away
    assert raised.value.back_at == pytest.approx(time.time() + 3600, abs=60)


async def test_a_rate_limit_that_outlasts_the_retries_says_when_the_provider_is_back(
    provider: Provider,
) -> None:
    provider.server.otherwise(provider.dialect.refused({"retry-after-ms": "1"}))

    with pytest.raises(ModelRateLimited) as raised:
        await make_model(provider.model, provider.config(max_retries=2)).complete(ASK)

    assert len(provider.server.requests) == 3
    assert raised.value.back_at is not None
