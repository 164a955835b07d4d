"""Claude through Anthropic's Messages API, streamed, with the official SDK.

Prompt caching is on: the request carries a top-level ``cache_control`` marker, so each
turn of an agent loop reads the conversation so far from the cache (at a tenth of the
input price) instead of paying for it again.
"""

from __future__ import annotations

import anthropic
import httpx2
from anthropic import AsyncAnthropic

from golem.agent.contracts import DeltaSink, LimitLedger, Price, WaitSink
from golem.agent.messages import ModelRequest, ModelResponse
from golem.agent.models.anthropic_wire import AnthropicReply, anthropic_messages, anthropic_tools
from golem.agent.models.failures import Endpoint
from golem.agent.models.limiter import MemoryLedger, ProviderLimiter, limit_key
from golem.agent.models.retry import Answered, CallBounds, SdkErrors, streamed_call
from golem.agent.models.tls import provider_tls
from golem.core.errors import ModelUnavailable
from golem.core.model_config import AnthropicConfig, ModelsConfig, ProviderConfig

__all__ = ["AnthropicModel"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
NO_KEY = "no-key"
"""Sent when the config says no key is needed (a proxy that adds the real credential):
the SDK must not go looking for credentials of its own."""


class AnthropicModel:
    """An Anthropic model (``anthropic/<model>``); see the Model protocol.

    Each call opens its own SDK client and closes it, so a model can be shared by tasks
    on one event loop or used from successive ``asyncio.run`` calls alike. Its calls go
    through the limiter of its key on ``ledger`` (see ``golem.agent.models.limiter``).
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        provider: ProviderConfig | None = None,
        price: Price | None = None,
        models: ModelsConfig | None = None,
        ledger: LimitLedger | None = None,
    ) -> None:
        self.name = f"anthropic/{model}"
        self.model = model
        self.price = price
        self._api_key = api_key or NO_KEY
        self._provider = provider or AnthropicConfig()
        base_url = self._provider.base_url or DEFAULT_BASE_URL
        self._endpoint = Endpoint(
            model=self.name,
            section="models.anthropic",
            key_env=self._provider.api_key_env,
            base_url=base_url,
        )
        self._bounds = CallBounds.of(self._provider, (models or ModelsConfig()).unavailable_after)
        self.limiter = ProviderLimiter(
            ledger or MemoryLedger(), limit_key("anthropic", base_url, api_key)
        )

    async def complete(
        self,
        request: ModelRequest,
        on_delta: DeltaSink | None = None,
        on_wait: WaitSink | None = None,
    ) -> ModelResponse:
        """One streamed Messages API call; see ``Model.complete``. A stream that fails
        midway is retried from the start, so ``on_delta`` may see the start of the reply
        again. Each request is cut off after the provider's ``timeout``."""
        return await streamed_call(
            self._endpoint,
            self._bounds,
            self.limiter,
            self._client,
            lambda client, answered: self._stream(client, request, on_delta, answered),
            errors=SdkErrors(
                status=anthropic.APIStatusError, connection=anthropic.APIConnectionError
            ),
            on_wait=on_wait,
        )

    def _client(self) -> AsyncAnthropic:
        # golem's limiter retries, for every call of this key at once: the SDK does not.
        return AsyncAnthropic(
            api_key=self._api_key,
            base_url=self._provider.base_url,
            max_retries=0,
            timeout=self._provider.timeout,
            http_client=anthropic.DefaultAsyncHttpxClient(verify=provider_tls()),
        )

    async def _stream(
        self,
        client: AsyncAnthropic,
        request: ModelRequest,
        on_delta: DeltaSink | None,
        answered: Answered,
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
            await answered(stream.response.headers)
            try:
                async for event in stream:
                    reply.feed(event)
            except (httpx2.TransportError, anthropic.APIConnectionError) as exc:
                # Raised mid-stream, after the SDK's retries: golem retries it.
                raise ModelUnavailable(f"the stream broke: {exc!r}") from exc
        return reply.response(self.price)
