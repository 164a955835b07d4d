"""SecretMasker: secrets never leave a stream, however the stream is chunked."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

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
