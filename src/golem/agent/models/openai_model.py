"""OpenAI models, and any server that speaks the OpenAI Chat Completions API, streamed,
with the official SDK (``openai/<model>`` and ``openai-compatible/<model>``)."""

from __future__ import annotations

import openai
from openai import AsyncOpenAI

from golem.agent.contracts import DeltaSink, LimitLedger, Price, WaitSink
from golem.agent.messages import ModelRequest, ModelResponse
from golem.agent.models.failures import Endpoint
from golem.agent.models.limiter import MemoryLedger, ProviderLimiter, limit_key
from golem.agent.models.openai_wire import OpenAIReply, openai_messages, openai_tools
from golem.agent.models.retry import Answered, CallBounds, SdkErrors, streamed_call
from golem.agent.models.tls import provider_tls
from golem.core.errors import ModelUnavailable
from golem.core.model_config import (
    ModelsConfig,
    OpenAICompatibleConfig,
    OpenAIConfig,
    ProviderConfig,
)

__all__ = ["OpenAIModel"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "no-key"
"""Sent to compatible servers that need no key: the SDK refuses an empty one, and must
not fall back to $OPENAI_API_KEY (a real key would leak to a third-party server)."""


class OpenAIModel:
    """A model behind the Chat Completions API; see the Model protocol.

    ``compatible=True`` is for other servers with that API (Ollama, vLLM, LM Studio,
    Docker Model Runner): the model string says ``openai-compatible/``, errors point at
    ``[models.openai_compatible]``, and the output cap is sent as ``max_tokens``, which
    they all understand, instead of OpenAI's ``max_completion_tokens``. Each call opens
    its own SDK client and closes it; its calls go through the limiter of its key on
    ``ledger`` (see ``golem.agent.models.limiter``).
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        provider: ProviderConfig | None = None,
        price: Price | None = None,
        compatible: bool = False,
        models: ModelsConfig | None = None,
        ledger: LimitLedger | None = None,
    ) -> None:
        prefix, section = (
            ("openai-compatible", "models.openai_compatible")
            if compatible
            else ("openai", "models.openai")
        )
        self.name = f"{prefix}/{model}"
        self.model = model
        self.price = price
        self.compatible = compatible
        self._api_key = api_key or NO_KEY
        self._provider = provider or (OpenAICompatibleConfig() if compatible else OpenAIConfig())
        base_url = self._provider.base_url or DEFAULT_BASE_URL
        self._endpoint = Endpoint(
            model=self.name,
            section=section,
            key_env=self._provider.api_key_env,
            base_url=base_url,
        )
        self._bounds = CallBounds.of(self._provider, (models or ModelsConfig()).unavailable_after)
        key = limit_key(prefix, base_url, api_key)
        self.limiter = ProviderLimiter(ledger or MemoryLedger(), key)

    async def complete(
        self,
        request: ModelRequest,
        on_delta: DeltaSink | None = None,
        on_wait: WaitSink | None = None,
    ) -> ModelResponse:
        """One streamed Chat Completions call; see ``Model.complete``. A stream that fails
        midway is retried from the start, so ``on_delta`` may see the start of the reply
        again. Each request is cut off after the provider's ``timeout``."""
        return await streamed_call(
            self._endpoint,
            self._bounds,
            self.limiter,
            self._client,
            lambda client, answered: self._stream(client, request, on_delta, answered),
            errors=SdkErrors(
                status=openai.APIStatusError,
                connection=openai.APIConnectionError,
                other=openai.APIError,
            ),
            on_wait=on_wait,
        )

    def _client(self) -> AsyncOpenAI:
        # golem's limiter retries, for every call of this key at once: the SDK does not.
        return AsyncOpenAI(
            api_key=self._api_key,
            base_url=self._provider.base_url,
            max_retries=0,
            timeout=self._provider.timeout,
            http_client=openai.DefaultAsyncHttpxClient(verify=provider_tls()),
        )

    async def _stream(
        self,
        client: AsyncOpenAI,
        request: ModelRequest,
        on_delta: DeltaSink | None,
        answered: Answered,
    ) -> ModelResponse:
        reply = OpenAIReply(on_delta=on_delta)
        stream = await client.chat.completions.create(
            model=self.model,
            messages=openai_messages(request.system, request.messages),
            tools=openai_tools(request.tools) if request.tools else openai.omit,
            temperature=request.temperature if request.temperature is not None else openai.omit,
            stream=True,
            stream_options={"include_usage": True},
            max_tokens=request.max_tokens if self.compatible else openai.omit,
            max_completion_tokens=openai.omit if self.compatible else request.max_tokens,
        )
        async with stream:
            await answered(stream.response.headers)
            try:
                async for chunk in stream:
                    reply.feed(chunk)
            except openai.APIConnectionError as exc:
                # Raised mid-stream, after the SDK's retries: golem retries it.
                raise ModelUnavailable(f"the stream broke: {exc.__cause__!r}") from exc
        return reply.response(self.price)
