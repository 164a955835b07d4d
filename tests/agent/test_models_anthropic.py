"""The Anthropic provider through the real SDK against a Messages API server on loopback."""

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
from golem.testing.anthropic_server import (
    AnthropicUsage,
    Text,
    ToolUse,
    error_reply,
    stream_reply,
)
from golem.testing.models import (
    ANTHROPIC_KEY_ENV,
    FAST_RETRY,
    TEST_KEY,
    AnthropicServer,
    Reply,
    WireServer,
    models_config,
)

READ = ToolSpec(
    name="read",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
ASK = ModelRequest(
    system="You fix bugs.", messages=[Message(role="user", content="Fix it.")], tools=[READ]
)


def model_for(server: AnthropicServer, max_retries: int = 2) -> Model:
    return make_model(
        "anthropic/claude-haiku-4-5", models_config(anthropic=server, max_retries=max_retries)
    )


async def test_streamed_text_reaches_on_delta_and_usage_prices_the_reply(
    anthropic_server: AnthropicServer,
) -> None:
    usage = AnthropicUsage(
        input_tokens=1000,
        output_tokens=200,
        cache_read_input_tokens=3000,
        cache_creation_input_tokens=500,
    )
    anthropic_server.push(stream_reply(Text("Hello there, world.", chunk=4), usage=usage))
    deltas: list[str] = []

    response = await model_for(anthropic_server).complete(ASK, deltas.append)

    assert response.message.content == "Hello there, world."
    assert len(deltas) > 1
    assert "".join(deltas) == "Hello there, world."
    assert response.stop_reason == "end_turn"
    assert response.model == "claude-sonnet-4-5-20250929"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1000, 200)
    assert (response.usage.cache_read_tokens, response.usage.cache_write_tokens) == (3000, 500)
    # claude-haiku-4-5: $1 in, $5 out, $0.10 cache read, $1.25 cache write per million
    assert response.cost_usd == pytest.approx((1000 * 1 + 200 * 5 + 3000 * 0.1 + 500 * 1.25) / 1e6)


async def test_request_carries_the_key_system_prompt_tools_and_a_cache_marker(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.push(stream_reply(Text("ok")))

    await model_for(anthropic_server).complete(ASK.model_copy(update={"max_tokens": 1234}))

    (request,) = anthropic_server.requests
    sent_key = request.headers.get("x-api-key") or request.headers["authorization"]
    assert sent_key.removeprefix("Bearer ") == TEST_KEY
    body = request.json
    assert body["model"] == "claude-haiku-4-5"
    assert body["stream"] is True
    assert body["max_tokens"] == 1234
    assert body["system"] == "You fix bugs."
    assert body["tools"] == [
        {"name": "read", "description": "Read a file.", "input_schema": READ.parameters}
    ]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Fix it."}]}]
    assert body["cache_control"] == {"type": "ephemeral"}
    assert "temperature" not in body


async def test_temperature_is_sent_when_the_request_sets_it(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.push(stream_reply(Text("ok")))

    await model_for(anthropic_server).complete(ASK.model_copy(update={"temperature": 0.2}))

    assert anthropic_server.requests[0].json["temperature"] == 0.2


async def test_parallel_tool_use_blocks_become_tool_calls_in_order(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.push(
        stream_reply(
            Text("Reading both."),
            ToolUse("read", {"path": "src/calc.py"}, id="toolu_a"),
            ToolUse("read", {"path": "tests/test_calc.py"}, id="toolu_b"),
        )
    )

    response = await model_for(anthropic_server).complete(ASK)

    assert response.stop_reason == "tool_use"
    assert response.message.content == "Reading both."
    assert [(c.id, c.name, c.arguments, c.error) for c in response.message.tool_calls] == [
        ("toolu_a", "read", {"path": "src/calc.py"}, None),
        ("toolu_b", "read", {"path": "tests/test_calc.py"}, None),
    ]


async def test_tool_results_go_back_as_one_user_turn_of_tool_result_blocks(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.push(
        stream_reply(
            Text("Reading both."),
            ToolUse("read", {"path": "a.py"}, id="toolu_a"),
            ToolUse("read", {"path": "b.py"}, id="toolu_b"),
        ),
        stream_reply(Text("Done.")),
    )
    model = model_for(anthropic_server)
    first = await model.complete(ASK)
    conversation = [
        *ASK.messages,
        first.message,
        Message(role="tool", tool_call_id="toolu_a", content="print('a')"),
        Message(role="tool", tool_call_id="toolu_b", content="No such file", is_error=True),
        Message(role="user", content="Keep going."),
    ]

    second = await model.complete(ASK.model_copy(update={"messages": conversation}))

    assert second.message.content == "Done."
    messages = anthropic_server.requests[1].json["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "Reading both."},
        {"type": "tool_use", "id": "toolu_a", "name": "read", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "toolu_b", "name": "read", "input": {"path": "b.py"}},
    ]
    assert messages[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_a",
            "is_error": False,
            "content": "print('a')",
        },
        {
            "type": "tool_result",
            "tool_use_id": "toolu_b",
            "is_error": True,
            "content": "No such file",
        },
        {"type": "text", "text": "Keep going."},
    ]


async def test_tool_input_that_is_not_a_json_object_is_a_tool_call_error(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.push(
        stream_reply(
            ToolUse("bash", '{"command": "ls', id="toolu_cut"),
            ToolUse("read", '["a.py"]', id="toolu_list"),
            ToolUse("ls", "", id="toolu_empty"),
        )
    )

    response = await model_for(anthropic_server).complete(ASK)

    cut, listed, empty = response.message.tool_calls
    assert cut.error is not None
    assert "not valid JSON" in cut.error
    assert cut.arguments == {}
    assert listed.error is not None
    assert "must be a JSON object" in listed.error
    assert (empty.error, empty.arguments) == (None, {})


@pytest.mark.parametrize(
    ("wire_reason", "stop_reason"),
    [
        ("end_turn", "end_turn"),
        ("stop_sequence", "end_turn"),
        ("max_tokens", "max_tokens"),
        ("refusal", "refusal"),
        ("pause_turn", "other"),
        ("model_context_window_exceeded", "other"),
    ],
)
async def test_stop_reasons_map_to_golem_stop_reasons(
    anthropic_server: AnthropicServer, wire_reason: str, stop_reason: str
) -> None:
    anthropic_server.push(stream_reply(Text("I"), stop_reason=wire_reason))

    response = await model_for(anthropic_server).complete(ASK)

    assert response.stop_reason == stop_reason


async def test_a_refusal_keeps_the_text_streamed_before_it(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.push(stream_reply(Text("I can't help with that."), stop_reason="refusal"))

    response = await model_for(anthropic_server).complete(ASK)

    assert response.stop_reason == "refusal"
    assert response.message.content == "I can't help with that."


async def test_rate_limit_is_retried_after_the_wait_retry_after_asks_for(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.push(
        error_reply(429, "rate_limit_error", "Slow down.", {"retry-after-ms": "200"}),
        stream_reply(Text("ok")),
    )

    response = await model_for(anthropic_server).complete(ASK)

    assert response.message.content == "ok"
    first, second = anthropic_server.requests
    assert second.received_at - first.received_at >= 0.2
    assert second.json == first.json


async def test_rate_limit_that_persists_is_model_rate_limited(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.otherwise(error_reply(429, "rate_limit_error", "Slow down.", FAST_RETRY))

    with pytest.raises(ModelRateLimited, match=r"429.*Slow down.*max_retries"):
        await model_for(anthropic_server, max_retries=2).complete(ASK)

    assert len(anthropic_server.requests) == 3


async def test_server_error_then_success_is_retried(anthropic_server: AnthropicServer) -> None:
    anthropic_server.push(
        error_reply(500, "api_error", "Internal error.", FAST_RETRY), stream_reply(Text("ok"))
    )

    response = await model_for(anthropic_server).complete(ASK)

    assert response.message.content == "ok"
    assert len(anthropic_server.requests) == 2


async def test_server_error_that_persists_is_model_unavailable(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.otherwise(error_reply(500, "api_error", "Internal error.", FAST_RETRY))

    with pytest.raises(ModelUnavailable, match=r"500.*Internal error.*try again later"):
        await model_for(anthropic_server, max_retries=2).complete(ASK)

    assert len(anthropic_server.requests) == 3


async def test_overloaded_529_is_retried(anthropic_server: AnthropicServer) -> None:
    anthropic_server.push(
        error_reply(529, "overloaded_error", "Overloaded", FAST_RETRY), stream_reply(Text("ok"))
    )

    response = await model_for(anthropic_server).complete(ASK)

    assert response.message.content == "ok"
    assert len(anthropic_server.requests) == 2


async def test_overloaded_error_event_mid_stream_is_retried_from_the_start(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.push(
        stream_reply(Text("Half a rep"), error=("overloaded_error", "Overloaded")),
        stream_reply(Text("A whole reply.")),
    )
    deltas: list[str] = []

    response = await model_for(anthropic_server).complete(ASK, deltas.append)

    assert response.message.content == "A whole reply."
    assert "".join(deltas) == "Half a repA whole reply."
    assert len(anthropic_server.requests) == 2


async def test_overloaded_mid_stream_on_every_attempt_is_model_unavailable(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.otherwise(stream_reply(Text("Half"), error=("overloaded_error", "Overloaded")))

    with pytest.raises(ModelUnavailable, match="overloaded_error: Overloaded"):
        await model_for(anthropic_server, max_retries=1).complete(ASK)

    assert len(anthropic_server.requests) == 2


async def test_a_connection_cut_mid_stream_is_retried(anthropic_server: AnthropicServer) -> None:
    anthropic_server.push(stream_reply(Text("Half a reply"), cut_after=3))
    anthropic_server.push(stream_reply(Text("A whole reply.")))

    response = await model_for(anthropic_server).complete(ASK)

    assert response.message.content == "A whole reply."
    assert len(anthropic_server.requests) == 2


async def test_a_stream_that_ends_before_message_stop_is_retried_then_unavailable(
    anthropic_server: AnthropicServer,
) -> None:
    whole = stream_reply(Text("A whole reply."))
    assert whole.events is not None
    anthropic_server.otherwise(Reply.stream(list(whole.events[:4])))

    with pytest.raises(ModelUnavailable, match=r"broke off mid-reply.*before message_stop"):
        await model_for(anthropic_server, max_retries=1).complete(ASK)

    assert len(anthropic_server.requests) == 2


async def test_a_stalled_stream_is_cut_off_at_the_providers_timeout(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.push(stream_reply(Text("Never finished."), hold_after=2))
    config = models_config(anthropic=anthropic_server)
    config.anthropic.timeout = 0.3
    config.anthropic.max_retries = 0  # a request cut at the timeout is retried, like a 5xx

    with pytest.raises(ModelUnavailable, match=r"within 0\.3 s.*raise timeout"):
        await make_model("anthropic/claude-haiku-4-5", config).complete(ASK)


async def test_an_unreachable_server_is_model_unavailable_naming_the_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, TEST_KEY)
    with WireServer() as gone:
        url = gone.url
    config = models_config(max_retries=0)
    config.anthropic.base_url = url

    with pytest.raises(ModelUnavailable, match=f"cannot reach {url}.*base_url"):
        await make_model("anthropic/claude-haiku-4-5", config).complete(ASK)


async def test_a_refused_key_is_model_auth_error_naming_the_variable(
    anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, "sk-wrong")

    with pytest.raises(ModelAuthError, match=f"401.*\\${ANTHROPIC_KEY_ENV}"):
        await model_for(anthropic_server).complete(ASK)

    assert len(anthropic_server.requests) == 1


async def test_a_bad_request_is_model_request_rejected_without_retries(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.push(
        error_reply(400, "invalid_request_error", "messages: text content blocks must be non-empty")
    )

    with pytest.raises(ModelRequestRejected, match=r"400.*non-empty.*model name"):
        await model_for(anthropic_server).complete(ASK)

    assert len(anthropic_server.requests) == 1


async def test_an_unknown_model_is_model_request_rejected(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.push(error_reply(404, "not_found_error", "model: claude-nonesuch"))

    with pytest.raises(ModelRequestRejected, match=r"404.*claude-nonesuch"):
        await model_for(anthropic_server).complete(ASK)
