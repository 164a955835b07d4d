"""Forge tokens minted per use: where a forge's token comes from, each time golem sends one.

Nothing holds a token string for a run's lifetime. Whoever talks to a forge (its REST
client, git) asks its ``TokenSource`` for the token to send now (``token``), and, after the
forge refused it (a 401, or git's "authentication failed"), for a fresh one (``refresh``).
``StaticToken`` is a token given as it is (a personal, project or group access token):
there is no fresh one to have. ``GitHubAppTokens`` (``golem.forge.github_app``) and
``GitLabOAuthTokens`` (``golem.forge.gitlab_oauth``) mint tokens that expire, and mint the
next one before the last expires (``Minted.usable``).

Every token a source hands out, and every secret it holds (an App's key, a refresh token),
is in ``secrets()``; those that ask (``on_minted``) learn each new token as it is minted,
so a run's masker covers tokens that did not exist when the run started.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import MethodType
from typing import Protocol, runtime_checkable

__all__ = [
    "REFRESH_MARGIN",
    "Clock",
    "Minted",
    "MintedTokens",
    "StaticToken",
    "TokenSource",
]

REFRESH_MARGIN = 300.0
"""Seconds before its expiry a minted token is replaced (half its life, if that is less)."""

Clock = Callable[[], float]
"""Seconds since the epoch (``time.time``; a test's own clock)."""


@runtime_checkable
class TokenSource(Protocol):
    """Where one forge's tokens come from. ``repo`` (``owner/name``), where known, is the
    repository the token is for (a GitHub App's installation depends on it)."""

    source: str
    """Where the tokens come from, for messages (``$GITHUB_TOKEN``, ``GitHub App 42``)."""

    async def token(self, repo: str | None = None) -> str:
        """The token to send now (minted, or refreshed, when the last one is near its end)."""
        ...

    async def refresh(self, stale: str, repo: str | None = None) -> str | None:
        """A token other than ``stale``, which the forge refused; None when there is no
        other to have (a static token). One refresh serves every caller that held
        ``stale``: a caller whose token was replaced meanwhile gets the new one."""
        ...

    def secrets(self) -> list[str]:
        """Every token handed out so far, and every secret held, for masking."""
        ...

    def on_minted(self, learn: Callable[[str], None]) -> None:
        """Call ``learn`` with each token minted from now on (a run's masker)."""
        ...


class StaticToken:
    """A token given as it is: sent every time, never refreshed."""

    def __init__(self, value: str, source: str) -> None:
        self._value = value
        self.source = source

    def __repr__(self) -> str:
        return f"StaticToken(source={self.source!r})"

    async def token(self, repo: str | None = None) -> str:
        """The token."""
        return self._value

    async def refresh(self, stale: str, repo: str | None = None) -> str | None:
        """None: a static token has no successor."""
        return None

    def secrets(self) -> list[str]:
        """The token."""
        return [self._value]

    def on_minted(self, learn: Callable[[str], None]) -> None:
        """Nothing is ever minted."""


@dataclass(frozen=True)
class Minted:
    """A minted token and when it stops working (None: unknown, used until refused)."""

    value: str
    expires_at: float | None
    minted_at: float

    def usable(self, now: float) -> bool:
        """Whether to send it at ``now``: not within its refresh margin of its expiry
        (``REFRESH_MARGIN``, or half its life when that is shorter)."""
        if self.expires_at is None:
            return True
        margin = min(REFRESH_MARGIN, (self.expires_at - self.minted_at) / 2)
        return now < self.expires_at - margin


class MintedTokens:
    """The tokens one source minted, and who learns of each new one. A listener that is a
    bound method is held weakly: a run's masker that is gone stops listening (a source
    outlives the runs it served)."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._listeners: list[Callable[[], Callable[[str], None] | None]] = []

    def add(self, value: str) -> None:
        """Record a new token and tell every listener still there."""
        if value in self.values:
            return
        self.values.append(value)
        alive = [(ref, learn) for ref in self._listeners if (learn := ref()) is not None]
        self._listeners = [ref for ref, _ in alive]
        for _, learn in alive:
            learn(value)

    def listen(self, learn: Callable[[str], None]) -> None:
        """Call ``learn`` with each token added from now on."""
        if isinstance(learn, MethodType):
            self._listeners.append(weakref.WeakMethod(learn))
        else:
            self._listeners.append(lambda: learn)
