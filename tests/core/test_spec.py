"""BoxSpec's and a call's bounds, checked where they are defined: what the kernel's exec takes
of an environment, and time limits the supervisor's timers can hold."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from golem.core.spec import MAX_ARG_STRLEN, MAX_ENV_BYTES, MAX_TIMEOUT, BoxSpec, check_env
from golem.sandbox.models import ExecRequest


def test_one_variable_may_take_what_exec_takes_and_not_a_byte_more() -> None:
    fits = {"A": "x" * (MAX_ARG_STRLEN - len("A=") - 1)}
    check_env(fits)
    with pytest.raises(ValueError, match="128 KiB"):
        check_env({"A": fits["A"] + "x"})


def test_the_whole_environment_is_bounded_across_env_and_secrets() -> None:
    half = {f"V{i}": "x" * 100_000 for i in range(6)}
    BoxSpec(env=half)
    with pytest.raises(ValidationError, match="1 MiB"):
        BoxSpec(env=half, secrets={f"S{i}": "x" * 100_000 for i in range(6)})
    with pytest.raises(ValueError, match="1 MiB"):
        check_env({f"V{i}": "x" * 100_000 for i in range(MAX_ENV_BYTES // 100_000 + 1)})


@pytest.mark.parametrize("env", [{"A=B": "1"}, {"": "1"}, {"A": "x\0y"}, {"A\0": "1"}])
def test_a_call_and_a_box_refuse_the_same_bad_variables(env: dict[str, str]) -> None:
    with pytest.raises(ValidationError, match="not a valid environment variable"):
        ExecRequest(cmd="true", env=env)
    with pytest.raises(ValidationError, match="not a valid environment variable"):
        BoxSpec(env=env)


def test_a_call_takes_no_time_limit_past_the_spec_bound() -> None:
    assert ExecRequest(cmd="true", timeout=MAX_TIMEOUT).timeout == MAX_TIMEOUT
    for field in ("timeout", "idle_timeout"):
        with pytest.raises(ValidationError, match=field):
            ExecRequest.model_validate({"cmd": "true", field: MAX_TIMEOUT + 1})
