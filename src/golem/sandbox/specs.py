"""A box's full spec: a configuration's defaults with what a caller gave on top (one way
for every engine that applies the configuration itself: this machine's, a cluster's)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from golem.core.config import GolemConfig
from golem.core.errors import ConfigError
from golem.core.spec import BoxSpec

__all__ = ["configured_spec"]


def configured_spec(
    config: GolemConfig, spec: BoxSpec | Mapping[str, Any] | None, overrides: Mapping[str, Any]
) -> BoxSpec:
    """A BoxSpec from ``config``'s defaults, with ``spec`` (its fields set) and
    ``overrides`` applied; ConfigError naming every invalid field."""
    if isinstance(spec, BoxSpec) and not overrides:
        return spec
    base = config.engine.defaults.model_dump(exclude_unset=False)
    given = spec.model_dump(exclude_unset=True) if isinstance(spec, BoxSpec) else dict(spec or {})
    try:
        return BoxSpec.model_validate({**base, **given, **overrides})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'spec'}: {error['msg']}"
            for error in exc.errors()
        )
        raise ConfigError(f"invalid box spec: {problems}") from exc
