"""What a model provider (or whoever answers in its name) sends back decides how long golem
waits, and what it says reaches terminals, events and a paused run's reason; what golem
keeps about a provider's limits is shared by every process on the store. Attacked here:

- any value of retry-after, retry-after-ms and the rate-limit headers (numbers out of
  range, NaN, dates far away or past, text): read as a wait of at most a day, or ignored,
  never a crash, through the real SDKs too;
- escape sequences and control characters in the provider's error: none reaches the
  error golem raises, hence neither a terminal nor a run's pause reason;
- the API key: kept nowhere in the store, only its fingerprint names the limiter.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.agent import Message, ModelRequest
from golem.agent.models import make_model
from golem.agent.models.rate_headers import LONGEST_WAIT, read_rate_headers
from golem.core.errors import ModelRateLimited, ModelUnavailable
from golem.store import SqlStore
from golem.testing.anthropic_server import Text, error_reply, stream_reply
from golem.testing.models import (
    ANTHROPIC_KEY_ENV,
    OPENAI_KEY_ENV,
    TEST_KEY,
    AnthropicServer,
    OpenAIServer,
    models_config,
)
from golem.testing.openai_server import error_reply as openai_error

ASK = ModelRequest(system="You fix bugs.", messages=[Message(role="user", content="Fix it.")])
HEADERS = [
    "retry-after",
    "retry-after-ms",
    "anthropic-ratelimit-requests-remaining",
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-tokens-limit",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
]
HOSTILE = [
    "1e999", "-5", "NaN", "inf", "-inf", "99999999999999999999", "0x10", "", " ", "1 2",
    "Wed, 21 Oct 2015 07:28:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "9999-12-31T23:59:59Z",
    "0001-01-01T00:00:00Z", "2025-13-45T99:99:99Z", "-1s", "1h1h1h1h", "999999999h",
    "5m-3s", "1" * 200, "\x1b[2J", "nan ms", "1e308ms",
]  # fmt: skip
ESCAPES = "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07 \x1b[2J\x1b[31mred\x9b1m\x07\x00"


@pytest.fixture
def anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicServer]:
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, TEST_KEY)
    with AnthropicServer(api_key=TEST_KEY) as server:
        yield server


@pytest.fixture
def openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv(OPENAI_KEY_ENV, TEST_KEY)
    with OpenAIServer(api_key=TEST_KEY) as server:
        yield server


def believable(value: float | None, now: float) -> bool:
    return value is None or (math.isfinite(value) and 0 <= value <= LONGEST_WAIT)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(HEADERS),
        st.one_of(st.sampled_from(HOSTILE), st.text(max_size=80)),
        min_size=1,
    )
)
def test_any_rate_header_is_a_wait_of_at_most_a_day_or_none(headers: dict[str, str]) -> None:
    now = time.time()
    told = read_rate_headers(headers, now)
    assert believable(told.retry_after, now)
    for quota in told.quotas:
        assert quota.reset is None or now <= quota.reset <= now + LONGEST_WAIT
        assert quota.remaining is None or 0 <= quota.remaining < 2**31
        assert quota.limit is None or 0 <= quota.limit < 2**31


@pytest.mark.parametrize("value", HOSTILE)
async def test_a_hostile_retry_after_through_the_sdk_holds_no_call_beyond_a_day(
    anthropic: AnthropicServer, value: str
) -> None:
    anthropic.otherwise(error_reply(429, "rate_limit_error", "Slow down.", {"retry-after": value}))
    config = models_config(anthropic=anthropic, max_retries=0)
    config.unavailable_after = 2
    started = time.time()

    with pytest.raises(ModelRateLimited) as raised:
        await make_model("anthropic/claude-haiku-4-5", config).complete(ASK)

    back_at = raised.value.back_at
    assert back_at is None or started <= back_at <= time.time() + LONGEST_WAIT


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_escape_sequences_in_a_providers_error_reach_no_error_golem_raises(
    request: pytest.FixtureRequest, provider: str
) -> None:
    if provider == "anthropic":
        claude: AnthropicServer = request.getfixturevalue("anthropic")
        claude.otherwise(error_reply(529, f"overloaded{ESCAPES}", ESCAPES, {"retry-after": "0"}))
        config = models_config(anthropic=claude, max_retries=0)
    else:
        gpt: OpenAIServer = request.getfixturevalue("openai")
        gpt.otherwise(openai_error(503, ESCAPES, f"server_error{ESCAPES}"))
        config = models_config(openai=gpt, max_retries=0)
    model = "anthropic/claude-haiku-4-5" if provider == "anthropic" else "openai/gpt-5-mini"

    with pytest.raises(ModelUnavailable) as raised:
        await make_model(model, config).complete(ASK)

    said = raised.value.message
    assert "click" in said
    assert not any(ch in said for ch in "\x1b\x9b\x07\x00")


async def test_a_model_key_is_kept_nowhere_in_the_store_only_its_fingerprint(
    anthropic: AnthropicServer, tmp_path: Path
) -> None:
    now = time.time()
    limits = {
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "49",
        "anthropic-ratelimit-requests-reset": time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 60)
        ),
    }
    anthropic.push(
        error_reply(429, "rate_limit_error", "Slow down.", {"retry-after-ms": "1"}),
        stream_reply(Text("ok"), headers=limits),
    )
    store = await SqlStore.connect(f"sqlite:///{tmp_path / 'golem.db'}")
    try:
        model = make_model(
            "anthropic/claude-haiku-4-5", models_config(anthropic=anthropic), ledger=store.limits
        )
        await model.complete(ASK)
        async with store.database.transaction() as db:
            rows = (await db.exec_driver_sql("SELECT key, document FROM provider_limits")).all()
    finally:
        await store.close()

    assert len(rows) == 1
    key, document = rows[0]
    assert key.startswith("*limit:anthropic:")
    assert len(key.removeprefix("*limit:anthropic:")) == 32
    assert '"mode":"counted"' in document.replace(" ", "")
    for path in tmp_path.iterdir():  # the database, its journal, anything beside it
        if path.is_file():
            assert TEST_KEY.encode() not in path.read_bytes(), path
