"""SecretMasker, golem's one masker: secrets never leave a stream, however the stream is
chunked; text, JSON-escaped forms and pydantic models are masked by the same rules, and the
forge's and the GitHub trigger's masking is the same masker."""

from __future__ import annotations

import io
import json
import logging

from hypothesis import given
from hypothesis import strategies as st

from golem.agent.events import ToolFinished, ToolStarted
from golem.agent.messages import ToolCall
from golem.blueprint.secrets import RunSecrets
from golem.core.masking import (
    basic_auth,
    mask_fields,
    mask_log_records,
    mask_text,
    masking_logs,
)
from golem.forge.auth import GitAuth, mask
from golem.sandbox import SecretMasker

SECRET = b"s3cr3t-token-XYZ"


def _masked_stream(chunks: list[bytes], secrets: list[bytes]) -> bytes:
    masker = SecretMasker(secrets)
    return b"".join(masker.feed(chunk) for chunk in chunks) + masker.flush()


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    pieces, start = [], 0
    for point in points:
        pieces.append(data[start:point])
        start = point
    return [*pieces, data[start:]]


def test_secret_split_across_two_chunks_is_masked() -> None:
    assert _masked_stream([b"key=s3cr3t-to", b"ken-XYZ done"], [SECRET]) == b"key=*** done"


def test_text_without_secrets_passes_unchanged_and_unheld() -> None:
    masker = SecretMasker([SECRET])
    assert masker.feed(b"hello world\n") == b"hello world\n"


def test_no_secrets_means_identity() -> None:
    assert _masked_stream([b"abc", b"def"], []) == b"abcdef"


def test_overlapping_prefix_does_not_leak_the_secret() -> None:
    assert b"abab" not in _masked_stream([b"xab", b"ab", b"y"], [b"abab"])


@given(
    prefix=st.binary(max_size=40),
    suffix=st.binary(max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=120), max_size=8),
)
def test_secret_never_survives_any_chunking(prefix: bytes, suffix: bytes, cuts: list[int]) -> None:
    data = prefix + SECRET + suffix + SECRET
    output = _masked_stream(_split(data, cuts), [SECRET, b"other-secret"])
    assert SECRET not in output
    assert output == SecretMasker([SECRET, b"other-secret"]).mask(data)


@given(
    prefix=st.binary(max_size=30),
    suffix=st.binary(max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=100), max_size=6),
)
def test_window_reads_at_any_offsets_never_reveal_a_secret(
    prefix: bytes, suffix: bytes, cuts: list[int]
) -> None:
    stream = prefix + SECRET + suffix
    masker = SecretMasker([SECRET])
    offset, pieces = 0, []
    for grown in sorted(min(c, len(stream)) for c in cuts):  # the log as it grows
        start = max(offset - masker.longest + 1, 0)
        piece, offset = masker.window(stream[start:grown], start, offset, final=False)
        pieces.append(piece)
    start = max(offset - masker.longest + 1, 0)
    piece, offset = masker.window(stream[start:], start, offset, final=True)
    pieces.append(piece)
    assert SECRET not in b"".join(pieces)
    assert b"".join(pieces) == masker.mask(stream)
    assert offset == len(stream)


def test_text_is_masked_longest_secret_first_and_otherwise_unchanged() -> None:
    text = "key=abc-def-ghi, part=abc-def, odd=\udcff, é"
    masked = mask_text(text, ["abc-def", "abc-def-ghi", ""])
    assert masked == "key=***, part=***, odd=\udcff, é"
    assert mask_text(text, []) is text


def test_the_forge_masks_with_the_same_masker() -> None:
    auth = GitAuth("tok-123456", "https://github.com/o/r.git")
    text = f"fatal: {auth.header} for tok-123456 and tok-12"
    assert mask(text, auth.secrets()) == mask_text(text, auth.secrets())
    assert mask(text, auth.secrets()) == "fatal: Authorization: Basic *** for *** and tok-12"


def test_a_secret_is_masked_in_its_json_escaped_forms_too() -> None:
    secret = 'pä"ss/wörd\\x'  # noqa: S105 - a test secret
    masker = SecretMasker([secret], keep_length=True)
    for dumped in (json.dumps(secret), json.dumps(secret, ensure_ascii=False),
                   json.dumps(secret).replace("/", "\\/")):  # fmt: skip
        masked = masker.mask(dumped.encode())
        assert set(masked[1:-1]) == {ord("*")}
        assert len(masked) == len(dumped.encode())


def test_basic_auth_is_the_token_git_and_the_proxy_send() -> None:
    auth = GitAuth("tok-123456", "https://github.com/o/r.git")
    assert auth.header == f"Authorization: Basic {basic_auth('x-access-token', 'tok-123456')}"


def test_every_string_of_a_model_is_masked_and_its_constants_are_kept() -> None:
    secret = "tool_result-s3cr3t"  # noqa: S105 - a test secret
    call = ToolCall(id="c1", name="bash", arguments={"command": f"echo {secret}", "n": [secret]})
    started = ToolStarted(call=call)
    masked = mask_fields(started, lambda text: mask_text(text, [secret, "tool_"]))
    assert masked.call.arguments == {"command": "echo ***", "n": ["***"]}
    assert masked.type == "tool_call"
    clean = ToolFinished(call_id="c", name="ls", output="x", is_error=False, duration=1.0)
    assert mask_fields(clean, lambda text: mask_text(text, [secret])) is clean


def test_every_log_record_made_in_a_runs_scope_is_masked_whatever_its_logger() -> None:
    """mask_log_records: a record from any logger (a child of golem's, uvicorn's, a
    library's) made inside masking_logs has the scope's secrets masked; outside, not."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("some.library.deep.child")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        mask_log_records()
        mask_log_records()  # idempotent
        with masking_logs(["s3cret-value-42"]):
            logger.warning("token is %s", "s3cret-value-42")
            try:
                int("failed with s3cret-value-42")
            except ValueError:
                logger.exception("boom")
        logger.warning("outside: %s", "s3cret-value-42")
    finally:
        logger.removeHandler(handler)
    lines = stream.getvalue()
    inside, outside = lines.split("outside:")
    assert "s3cret-value-42" not in inside
    assert inside.count("***") == 3  # the message, the failing line, the exception
    assert "s3cret-value-42" in outside


def test_a_secret_learnt_inside_a_runs_scope_is_masked_in_the_log_records_after() -> None:
    """masking_logs given a function asks it at each record: a forge token minted mid-run
    (learnt by the run's RunSecrets) is masked in every record made after."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("some.library.minted")
    logger.addHandler(handler)
    logger.propagate = False
    secrets = RunSecrets(["first-token-0123"])
    try:
        mask_log_records()
        with masking_logs(secrets.current):
            secrets.learn("minted-later-4567")
            logger.warning("pushing with %s after %s", "minted-later-4567", "first-token-0123")
    finally:
        logger.removeHandler(handler)
    assert stream.getvalue() == "pushing with *** after ***\n"
