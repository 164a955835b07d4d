"""Claude through Anthropic's Messages API, streamed, with the official SDK.

Prompt caching is on: the request carries a top-level ``cache_control`` marker, so each
turn of an agent loop reads the conversation so far from the cache (at a tenth of the
input price) instead of paying for it again.
"""

from __future__ import annotations

import anthropic
import httpx2
from anthropic import AsyncAnthropic

from golem.agent.contracts import DeltaSink, Price
from golem.agent.messages import ModelRequest, ModelResponse
from golem.agent.models.anthropic_wire import AnthropicReply, anthropic_messages, anthropic_tools
from golem.agent.models.failures import Endpoint, failure_kind
from golem.agent.models.retry import SdkErrors, streamed_call
from golem.core.errors import ModelUnavailable
from golem.core.model_config import AnthropicConfig, ProviderConfig

__all__ = ["AnthropicModel"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
NO_KEY = "no-key"
"""Sent when the config says no key is needed (a proxy that adds the real credential):
the SDK must not go looking for credentials of its own."""


class AnthropicModel:
    """An Anthropic model (``anthropic/<model>``); see the Model protocol.

    Each call opens its own SDK client and closes it, so a model can be shared by tasks
    on one event loop or used from successive ``asyncio.run`` calls alike.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        provider: ProviderConfig | None = None,
        price: Price | None = None,
    ) -> None:
        self.name = f"anthropic/{model}"
        self.model = model
        self.price = price
        self._api_key = api_key or NO_KEY
        self._provider = provider or AnthropicConfig()
        self._endpoint = Endpoint(
            model=self.name,
            section="models.anthropic",
            key_env=self._provider.api_key_env,
            base_url=self._provider.base_url or DEFAULT_BASE_URL,
            max_retries=self._provider.max_retries,
        )

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        """One streamed Messages API call; see ``Model.complete``. A stream that fails
        midway is retried from the start, so ``on_delta`` may see the start of the reply
        again. The whole call, retries included, is cut off after the provider's
        ``timeout``."""
        return await streamed_call(
            self._endpoint,
            self._provider,
            self._client,
            lambda client: self._stream(client, request, on_delta),
            errors=SdkErrors(
                status=anthropic.APIStatusError, connection=anthropic.APIConnectionError
            ),
            is_transient=_broken_stream,
        )

    def _client(self) -> AsyncAnthropic:
        return AsyncAnthropic(
            api_key=self._api_key,
            base_url=self._provider.base_url,
            max_retries=self._provider.max_retries,
            timeout=self._provider.timeout,
        )

    async def _stream(
        self, client: AsyncAnthropic, request: ModelRequest, on_delta: DeltaSink | None
    ) -> ModelResponse:
        reply = AnthropicReply(on_delta=on_delta)
        # The SDK no longer names temperature; send it as given, for models that take it.
        extra = None if request.temperature is None else {"temperature": request.temperature}
        stream = await client.messages.create(
            model=self.model,
            max_tokens=request.max_tokens,
            messages=anthropic_messages(request.messages),
            system=request.system or anthropic.omit,
            tools=anthropic_tools(request.tools) if request.tools else anthropic.omit,
            cache_control={"type": "ephemeral"},
            extra_body=extra,
            stream=True,
        )
        async with stream:
            try:
                async for event in stream:
                    reply.feed(event)
            except (httpx2.TransportError, anthropic.APIConnectionError) as exc:
                # Raised mid-stream, after the SDK's retries: golem retries it.
                raise ModelUnavailable(f"the stream broke: {exc!r}") from exc
        return reply.response(self.price)


def _broken_stream(exc: Exception) -> bool:
    """A stream that began with 200 and then failed in a way a new attempt may cure: an
    error event of a transient type (``overloaded_error``), a cut connection. Error
    statuses were retried by the SDK already."""
    if isinstance(exc, anthropic.APIStatusError):
        if exc.status_code >= 400:
            return False
        return failure_kind(None, exc.type) in ("rate_limited", "unavailable")
    return isinstance(exc, ModelUnavailable)
