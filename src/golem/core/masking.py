"""The one secret masker: every path out of a box (its output, tool results, events, what
the egress proxy hands back, log records) replaces secrets with ``***`` through it.

``SecretMasker`` masks bytes, streamed (correct when a secret is split across chunks) or
whole, and text; it knows a secret's JSON-escaped and URL-encoded forms too.
``mask_fields`` masks every string of a pydantic model (its extra fields too).
``basic_auth`` gives the form golem itself sends a basic-auth secret in, which must be
masked too. ``SecretLogFilter`` masks log records with the secrets ``masking_logs`` put
in scope.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import re
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, Literal, TypeVar, cast, get_origin

from pydantic import BaseModel

__all__ = [
    "MASK",
    "SecretLogFilter",
    "SecretMasker",
    "basic_auth",
    "mask_fields",
    "mask_log_records",
    "mask_text",
    "masking_logs",
]

MASK = b"***"
T = TypeVar("T")


class SecretMasker:
    """Replaces every secret in a stream with ``***`` (longest secret first, so that a
    secret holding another is masked whole).

    Feed chunks with :meth:`feed`; bytes that might be the start of a secret are held back
    until the next chunk (or :meth:`flush`) shows whether they are.
    """

    def __init__(self, secrets: Iterable[str | bytes], *, keep_length: bool = False) -> None:
        """``keep_length`` masks each secret with as many ``*`` as it has bytes, so the
        length of what passes is unchanged (an HTTP body with a Content-Length)."""
        values = {form for s in secrets for form in _forms(s)}
        self._replace: bytes | Callable[[re.Match[bytes]], bytes] = (
            (lambda match: b"*" * len(match.group())) if keep_length else MASK
        )
        self._secrets = sorted((v for v in values if v), key=len, reverse=True)
        self._pattern = (
            re.compile(b"|".join(re.escape(s) for s in self._secrets)) if self._secrets else None
        )
        self._pending = b""

    def __bool__(self) -> bool:
        """Whether there is anything to mask."""
        return self._pattern is not None

    def feed(self, chunk: bytes) -> bytes:
        """Return the masked bytes that are safe to emit now."""
        if self._pattern is None:
            return chunk
        data = self._pending + chunk
        cut = len(data) - self._partial_suffix(data)
        for match in self._pattern.finditer(data):
            if match.start() < cut < match.end():
                cut = match.start()
                break
        self._pending = data[cut:]
        return self._pattern.sub(self._replace, data[:cut])

    def flush(self) -> bytes:
        """Return what is held back at the end of the stream, masked."""
        data, self._pending = self._pending, b""
        return self._pattern.sub(self._replace, data) if self._pattern else data

    def mask(self, data: bytes) -> bytes:
        """Mask a complete piece of output in one go."""
        return self._pattern.sub(self._replace, data) if self._pattern else data

    def mask_text(self, text: str) -> str:
        """Mask a complete string; everything but the secrets comes back as it was (lone
        surrogates included)."""
        if self._pattern is None:
            return text
        data = text.encode("utf-8", "surrogatepass")
        masked = self.mask(data)
        return text if masked == data else masked.decode("utf-8", "surrogatepass")

    @property
    def longest(self) -> int:
        """Length in bytes of the longest secret (0 without secrets)."""
        return len(self._secrets[0]) if self._secrets else 0

    def window(self, data: bytes, start: int, offset: int, final: bool) -> tuple[bytes, int]:
        """Mask a window of a stream read at random offsets (a background process's log).

        ``data`` holds the stream from byte ``start`` on; the caller has already been given
        everything before ``offset``. Returns what is safe to give from ``offset`` on, and
        the offset to continue from: unless ``final``, a tail that may begin a secret is
        held back. Read again from up to ``longest - 1`` bytes before ``offset`` so that a
        secret straddling ``offset`` is seen whole.
        """
        matches = list(self._pattern.finditer(data)) if self._pattern else []
        cut = len(data) if final else len(data) - self._partial_suffix(data)
        for match in matches:
            if match.start() < cut < match.end():
                cut = match.start()
        skip = max(offset - start, 0)
        out = bytearray()
        position = skip
        for match in matches:
            if match.end() <= skip:
                continue
            if match.start() >= cut:
                break
            out += data[position : match.start()]
            out += self._replace if isinstance(self._replace, bytes) else self._replace(match)
            position = match.end()
        out += data[position:cut]
        return bytes(out), start + max(cut, skip)

    def partial_prefix(self, data: bytes) -> int:
        """Length of the longest prefix of ``data`` that is a proper suffix of a secret:
        the end of a secret whose start was cut off (dropped from a bounded buffer)."""
        longest = 0
        for secret in self._secrets:
            for size in range(min(len(secret) - 1, len(data)), longest, -1):
                if data.startswith(secret[-size:]):
                    longest = size
                    break
        return longest

    def _partial_suffix(self, data: bytes) -> int:
        """Length of the longest suffix of ``data`` that is a proper prefix of a secret."""
        longest = 0
        for secret in self._secrets:
            for size in range(min(len(secret) - 1, len(data)), longest, -1):
                if data.endswith(secret[:size]):
                    longest = size
                    break
        return longest


def _forms(secret: str | bytes) -> set[bytes]:
    """A secret and its JSON-escaped and URL-encoded forms (golem's in-box tools answer in
    JSON, and so do the CLIs and APIs it talks to; a URL or a form carries it encoded): a
    secret with a quote, a backslash, a slash, a space or a non-ASCII character looks
    different there."""
    data = secret.encode() if isinstance(secret, str) else secret
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return {data}
    escaped = {json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]}
    escaped |= {form.replace("/", "\\/") for form in escaped}
    escaped |= {urllib.parse.quote(text, safe=""), urllib.parse.quote_plus(text, safe="")}
    return {data, *(form.encode() for form in escaped)}


def mask_text(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced by ``***``."""
    return SecretMasker(secrets).mask_text(text)


def basic_auth(username: str, value: str) -> str:
    """The token of ``Authorization: Basic <token>`` for a username and secret: golem sends
    a basic-auth secret in this form, so whoever masks the secret masks this form too."""
    return base64.b64encode(f"{username}:{value}".encode()).decode()


def mask_fields(value: T, mask: Callable[[str], str]) -> T:
    """``value`` with ``mask`` applied to every string in it: pydantic models (their fields
    typed as a ``Literal`` excepted: those are golem's own constants, such as an event's
    type; the extra fields of a model that allows them included), lists, tuples and dicts
    (keys and values). What holds no secret is returned as
    the same object, so a model without one is not copied."""
    return cast(T, _masked(value, mask))


def _masked(value: object, mask: Callable[[str], str]) -> object:
    if isinstance(value, str):
        masked = mask(value)
        return value if masked == value else masked
    if isinstance(value, BaseModel):
        return _masked_model(value, mask)
    if isinstance(value, list | tuple):
        items = [_masked(item, mask) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        pairs = [(_masked(k, mask), _masked(v, mask)) for k, v in value.items()]
        olds = [part for pair in value.items() for part in pair]
        news = [part for pair in pairs for part in pair]
        return value if all(a is b for a, b in zip(news, olds, strict=True)) else dict(pairs)
    return value


def _masked_model(model: BaseModel, mask: Callable[[str], str]) -> BaseModel:
    changes = {}
    for name, info in type(model).model_fields.items():
        if get_origin(info.annotation) is Literal:
            continue
        old = getattr(model, name)
        new = _masked(old, mask)
        if new is not old:
            changes[name] = new
    for name, old in (model.model_extra or {}).items():
        new = _masked(old, mask)
        if new is not old:
            changes[name] = new
    return model.model_copy(update=changes) if changes else model


_LOG_SECRETS: ContextVar[tuple[Callable[[], Iterable[str]], ...]] = ContextVar(
    "golem_log_secrets", default=()
)


@contextlib.contextmanager
def masking_logs(secrets: Iterable[str] | Callable[[], Iterable[str]]) -> Iterator[None]:
    """Within this block (and the tasks and threads it starts, which copy its context), log
    records that pass a ``SecretLogFilter`` have ``secrets`` masked: the values, or a
    function asked for them at each record (secrets learnt later, such as a forge token
    minted mid-run, are masked too). Scoped to the code that holds the secrets (a run, a
    session), so no registry of every secret is kept."""
    if callable(secrets):
        current = secrets
    else:
        fixed = tuple(s for s in secrets if s)
        current = lambda: fixed  # noqa: E731
    token = _LOG_SECRETS.set((*_LOG_SECRETS.get(), current))
    try:
        yield
    finally:
        _LOG_SECRETS.reset(token)


class SecretLogFilter(logging.Filter):
    """Masks a record's message, traceback and stack with the secrets in scope
    (``masking_logs``). Add it to a handler (or to each logger that may carry a secret:
    a logger's own filters do not see records of its children)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Mask ``record`` in place; never drops it."""
        secrets = [s for current in _LOG_SECRETS.get() for s in current() if s]
        if not secrets:
            return True
        masker = SecretMasker(secrets)
        record.msg, record.args = masker.mask_text(record.getMessage()), None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None  # formatters show exc_text; the exception object keeps none
        if record.exc_text:
            record.exc_text = masker.mask_text(record.exc_text)
        if record.stack_info:
            record.stack_info = masker.mask_text(record.stack_info)
        return True


_FILTER = SecretLogFilter()


def mask_log_records() -> None:
    """Mask every log record made in this process, by any logger, with the secrets of the
    ``masking_logs`` scope it is made in (nothing out of scope). Idempotent: the record
    factory is wrapped once. A filter on a logger would miss its children's records, and
    one on a handler the handlers golem does not own (uvicorn's, a user's)."""
    factory = logging.getLogRecordFactory()
    if getattr(factory, "golem_masks", False):
        return

    def masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        _FILTER.filter(record)
        return record

    masked_record.golem_masks = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(masked_record)
