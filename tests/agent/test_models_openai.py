"""The OpenAI provider through the real SDK against a Chat Completions server on loopback."""

from __future__ import annotations

import pytest

from golem.agent import Message, Model, ModelRequest, ToolSpec
from golem.agent.models import make_model
from golem.core.errors import (
    ModelAuthError,
    ModelRateLimited,
    ModelRequestRejected,
    ModelUnavailable,
)
from golem.testing.models import FAST_RETRY, OPENAI_KEY_ENV, TEST_KEY, OpenAIServer, models_config
from golem.testing.openai_server import OpenAIUsage, ToolCall, error_reply, stream_reply

READ = ToolSpec(
    name="read",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
ASK = ModelRequest(
    system="You fix bugs.", messages=[Message(role="user", content="Fix it.")], tools=[READ]
)


def model_for(server: OpenAIServer, max_retries: int = 2, name: str = "openai/gpt-5-mini") -> Model:
    return make_model(name, models_config(openai=server, max_retries=max_retries))


async def test_streamed_text_reaches_on_delta_and_usage_prices_the_reply(
    openai_server: OpenAIServer,
) -> None:
    usage = OpenAIUsage(prompt_tokens=1000, completion_tokens=100, cached_tokens=400)
    openai_server.push(stream_reply("Hello there, world.", chunk=4, usage=usage))
    deltas: list[str] = []

    response = await model_for(openai_server).complete(ASK, deltas.append)

    assert response.message.content == "Hello there, world."
    assert len(deltas) > 1
    assert "".join(deltas) == "Hello there, world."
    assert response.stop_reason == "end_turn"
    assert response.model == "gpt-5-mini-2025-08-07"
    # cached tokens are counted apart from (uncached) input, as Anthropic counts them
    assert (response.usage.input_tokens, response.usage.cache_read_tokens) == (600, 400)
    assert response.usage.output_tokens == 100
    # gpt-5-mini: $0.25 in, $2 out, $0.025 cached in, per million
    assert response.cost_usd == pytest.approx((600 * 0.25 + 100 * 2 + 400 * 0.025) / 1e6)


async def test_request_carries_the_key_system_prompt_tools_and_asks_for_usage(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push(stream_reply("ok"))

    await model_for(openai_server).complete(ASK.model_copy(update={"max_tokens": 1234}))

    (request,) = openai_server.requests
    assert request.headers["authorization"] == f"Bearer {TEST_KEY}"
    body = request.json
    assert body["model"] == "gpt-5-mini"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 1234
    assert "max_tokens" not in body
    assert "temperature" not in body
    assert body["messages"] == [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Fix it."},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": READ.parameters,
            },
        }
    ]


async def test_parallel_tool_calls_are_assembled_by_index(openai_server: OpenAIServer) -> None:
    openai_server.push(
        stream_reply(
            tool_calls=[
                ToolCall("read", {"path": "src/calc.py"}, id="call_a", chunk=3),
                ToolCall("read", {"path": "tests/test_calc.py"}, id="call_b", chunk=4),
            ]
        )
    )

    response = await model_for(openai_server).complete(ASK)

    assert response.stop_reason == "tool_use"
    assert [(c.id, c.name, c.arguments, c.error) for c in response.message.tool_calls] == [
        ("call_a", "read", {"path": "src/calc.py"}, None),
        ("call_b", "read", {"path": "tests/test_calc.py"}, None),
    ]


async def test_tool_results_go_back_as_tool_messages_with_their_call_ids(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push(
        stream_reply(
            "Reading both.",
            tool_calls=[
                ToolCall("read", {"path": "a.py"}, id="call_a"),
                ToolCall("read", {"path": "b.py"}, id="call_b"),
            ],
        ),
        stream_reply("Done."),
    )
    model = model_for(openai_server)
    first = await model.complete(ASK)
    conversation = [
        *ASK.messages,
        first.message,
        Message(role="tool", tool_call_id="call_a", content="print('a')"),
        Message(role="tool", tool_call_id="call_b", content="No such file", is_error=True),
    ]

    second = await model.complete(ASK.model_copy(update={"messages": conversation}))

    assert second.message.content == "Done."
    messages = openai_server.requests[1].json["messages"]
    assert messages[2:] == [
        {
            "role": "assistant",
            "content": "Reading both.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "a.py"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "b.py"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "print('a')"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: No such file"},
    ]


async def test_tool_arguments_that_are_not_a_json_object_are_a_tool_call_error(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push(
        stream_reply(
            tool_calls=[
                ToolCall("bash", '{"command": "ls', id="call_cut"),
                ToolCall("read", "42", id="call_number"),
            ]
        )
    )

    response = await model_for(openai_server).complete(ASK)

    cut, number = response.message.tool_calls
    assert cut.error is not None
    assert "not valid JSON" in cut.error
    assert number.error is not None
    assert "must be a JSON object, not int" in number.error


async def test_a_refusal_is_the_content_with_stop_reason_refusal(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push(stream_reply(refusal="I can't help with that."))
    deltas: list[str] = []

    response = await model_for(openai_server).complete(ASK, deltas.append)

    assert response.stop_reason == "refusal"
    assert response.message.content == "I can't help with that."
    assert "".join(deltas) == "I can't help with that."


@pytest.mark.parametrize(
    ("finish_reason", "stop_reason"),
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("content_filter", "refusal"),
        ("tool_calls", "tool_use"),
    ],
)
async def test_finish_reasons_map_to_golem_stop_reasons(
    openai_server: OpenAIServer, finish_reason: str, stop_reason: str
) -> None:
    openai_server.push(stream_reply("I", finish_reason=finish_reason))

    response = await model_for(openai_server).complete(ASK)

    assert response.stop_reason == stop_reason


async def test_tool_calls_with_finish_reason_stop_still_stop_for_tool_use(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push(stream_reply(tool_calls=[ToolCall("ls", {})], finish_reason="stop"))

    response = await model_for(openai_server).complete(ASK)

    assert response.stop_reason == "tool_use"
    assert response.message.tool_calls[0].id == "call_0"


async def test_rate_limit_is_retried_after_the_retry_after_seconds(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push(
        error_reply(
            429,
            "Rate limit reached for requests",
            "requests",
            "rate_limit_exceeded",
            headers={"retry-after": "1"},
        ),
        stream_reply("ok"),
    )

    response = await model_for(openai_server).complete(ASK)

    assert response.message.content == "ok"
    first, second = openai_server.requests
    assert second.received_at - first.received_at >= 1.0
    assert second.json == first.json


async def test_rate_limit_that_persists_is_model_rate_limited(
    openai_server: OpenAIServer,
) -> None:
    openai_server.otherwise(
        error_reply(
            429, "Rate limit reached", "requests", "rate_limit_exceeded", headers=FAST_RETRY
        )
    )

    with pytest.raises(ModelRateLimited, match="429"):
        await model_for(openai_server, max_retries=2).complete(ASK)

    assert len(openai_server.requests) == 3


async def test_server_error_then_success_is_retried(openai_server: OpenAIServer) -> None:
    openai_server.push(
        error_reply(500, "The server had an error.", "server_error", headers=FAST_RETRY),
        stream_reply("ok"),
    )

    response = await model_for(openai_server).complete(ASK)

    assert response.message.content == "ok"
    assert len(openai_server.requests) == 2


async def test_server_error_that_persists_is_model_unavailable(
    openai_server: OpenAIServer,
) -> None:
    openai_server.otherwise(
        error_reply(503, "The engine is currently overloaded.", "server_error", headers=FAST_RETRY)
    )

    with pytest.raises(ModelUnavailable, match=r"503.*overloaded.*try again later"):
        await model_for(openai_server, max_retries=2).complete(ASK)

    assert len(openai_server.requests) == 3


async def test_an_error_chunk_mid_stream_is_retried(openai_server: OpenAIServer) -> None:
    openai_server.push(
        stream_reply("Half", error={"message": "The server had an error.", "type": "server_error"}),
        stream_reply("A whole reply."),
    )

    response = await model_for(openai_server).complete(ASK)

    assert response.message.content == "A whole reply."
    assert len(openai_server.requests) == 2


async def test_a_stream_that_ends_without_finishing_is_retried(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push(stream_reply("Half a reply", cut_after=2), stream_reply("Whole."))

    response = await model_for(openai_server).complete(ASK)

    assert response.message.content == "Whole."
    assert len(openai_server.requests) == 2


async def test_a_stalled_stream_is_cut_off_at_the_providers_timeout(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push(stream_reply("Never finished.", hold_after=2))
    config = models_config(openai=openai_server)
    config.openai.timeout = 0.3
    config.openai.max_retries = 0  # a request cut at the timeout is retried, like a 5xx

    with pytest.raises(ModelUnavailable, match=r"within 0\.3 s.*raise timeout"):
        await make_model("openai/gpt-5-mini", config).complete(ASK)


async def test_a_refused_key_is_model_auth_error_naming_the_variable(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(OPENAI_KEY_ENV, "sk-wrong")

    with pytest.raises(ModelAuthError, match=f"401.*\\${OPENAI_KEY_ENV}"):
        await model_for(openai_server).complete(ASK)

    assert len(openai_server.requests) == 1


async def test_a_bad_request_is_model_request_rejected_without_retries(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push(
        error_reply(400, "Invalid value for 'messages'.", "invalid_request_error", param="messages")
    )

    with pytest.raises(ModelRequestRejected, match=r"400.*Invalid value for 'messages'"):
        await model_for(openai_server).complete(ASK)

    assert len(openai_server.requests) == 1


async def test_openai_compatible_sends_max_tokens_and_no_real_key_when_none_is_set(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    openai_server.api_key = None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")
    config = models_config(openai=openai_server)
    config.openai_compatible.api_key_env = "GOLEM_TEST_UNSET_KEY"
    config.openai_compatible.api_key_required = False
    monkeypatch.delenv("GOLEM_TEST_UNSET_KEY", raising=False)
    openai_server.push(stream_reply("Hi from a local model.", model="qwen3:8b"))

    model = make_model("openai-compatible/qwen3:8b", config)
    response = await model.complete(ASK.model_copy(update={"max_tokens": 500}))

    assert model.name == "openai-compatible/qwen3:8b"
    assert response.message.content == "Hi from a local model."
    assert response.cost_usd == 0
    (request,) = openai_server.requests
    assert "sk-real-openai-key" not in request.headers["authorization"]
    assert request.json["max_tokens"] == 500
    assert "max_completion_tokens" not in request.json
