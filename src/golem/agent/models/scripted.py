"""The scripted model (``scripted:PATH``): replays assistant turns from a file, for demos,
tests and replays of recorded trajectories. The format is in ``script.py`` and
docs/models.md."""

from __future__ import annotations

from pathlib import Path

from golem.agent.contracts import DeltaSink, Price, WaitSink
from golem.agent.messages import ModelRequest, ModelResponse
from golem.agent.models.prices import cost_usd
from golem.agent.models.script import load_script
from golem.core.errors import ModelRequestRejected

__all__ = ["ScriptedModel"]


class ScriptedModel:
    """A Model that answers each call with the next reply of a script, whatever the
    request; once the script is used up, every call is refused."""

    def __init__(
        self,
        responses: list[ModelResponse],
        *,
        name: str = "scripted",
        price: Price | None = None,
    ) -> None:
        self.name = name
        self.price = price
        self._responses = list(responses)
        self._next = 0
        self.requests: list[ModelRequest] = []
        """Every request it was sent, in order (what a model would have read)."""

    @classmethod
    def from_file(cls, path: str | Path, *, price: Price | None = None) -> ScriptedModel:
        """The model for a YAML script or a ``.jsonl`` trajectory; ``price`` overrides the
        script's own. Raises ConfigError for a file that cannot be used."""
        script = load_script(Path(path))
        return cls(script.responses, name=f"scripted:{path}", price=price or script.price)

    @property
    def turns_left(self) -> int:
        """Replies not yet given."""
        return len(self._responses) - self._next

    async def complete(
        self,
        request: ModelRequest,
        on_delta: DeltaSink | None = None,
        on_wait: WaitSink | None = None,
    ) -> ModelResponse:
        """The next scripted reply; its text goes to ``on_delta`` in one piece (it never
        waits: ``on_wait`` hears nothing). Its cost
        is computed from its usage when the model has a price (else a recorded reply
        keeps its recorded cost)."""
        if self._next >= len(self._responses):
            raise ModelRequestRejected(
                f"{self.name}: the script ended after {len(self._responses)} turns and the "
                "agent asked for another. Add turns to the script, or end its last turn "
                "with a finish tool call."
            )
        self.requests.append(request.model_copy(deep=True))
        response = self._responses[self._next]
        self._next += 1
        if on_delta is not None and response.message.content:
            on_delta(response.message.content)
        if self.price is not None:
            response = response.model_copy(
                update={"cost_usd": cost_usd(response.usage, self.price)}
            )
        return response.model_copy(deep=True)
