"""One event base under every layer's union: a call's events in a box, an agent run's, a
run's (which wraps its agent steps' events)."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import ValidationError

from golem.agent import AgentEvent
from golem.blueprint.events import RunEvent
from golem.core import Event, ExecEvent


def members(union: Any) -> list[type]:
    """The classes of an annotated discriminated union."""
    [inner, *_] = get_args(union)
    return list(get_args(inner))


@pytest.mark.parametrize("union", [ExecEvent, AgentEvent, RunEvent])
def test_every_event_of_every_layer_derives_from_the_one_base(union: Any) -> None:
    classes = members(union)
    assert classes
    assert [cls for cls in classes if not issubclass(cls, Event)] == []


@pytest.mark.parametrize("union", [ExecEvent, AgentEvent, RunEvent])
def test_every_event_is_frozen_refuses_unknown_fields_and_has_a_time(union: Any) -> None:
    for cls in members(union):
        assert cls.model_config.get("frozen") is True, cls
        assert cls.model_config.get("extra") == "forbid", cls
        assert "time" in cls.model_fields, cls
        with pytest.raises(ValidationError, match="extra"):
            cls.model_validate({"surprise": 1})
