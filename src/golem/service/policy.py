"""Server-side policy: what a key's role may ask of a box. A request beyond it is refused
with an error that names the policy; nothing is quietly lowered, and options the API does
not offer (seccomp, capabilities, the backend) cannot be asked for at all."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from golem.core.errors import GolemError
from golem.core.server_config import RolePolicy
from golem.core.sizes import format_size
from golem.core.spec import BoxSpec

__all__ = ["PolicyViolation", "check_spec"]


class PolicyViolation(GolemError):
    """The key's role does not allow what the request asks for."""

    exit_code = 2
    http_status = 403


def _exceeds(asked: float | None, limit: float | None) -> bool:
    """Whether ``asked`` passes ``limit`` (None asked means no cap: beyond any limit)."""
    if limit is None:
        return False
    return asked is None or asked > limit


def _show(name: str, value: float | None) -> str:
    if value is None:
        return "no limit"
    if name in ("memory", "workspace_size"):
        return format_size(int(value))
    return f"{value:g}"


def check_spec(
    spec: BoxSpec, asked: Mapping[str, Any], policy: RolePolicy, role: str, default_image: str
) -> None:
    """Refuse ``spec`` (the effective box) when ``policy`` does not allow it; ``asked`` is
    what the request set itself, so that defaults are never held against it."""
    where = f"server.policies.{role}"
    problems: list[str] = []
    limits: list[tuple[str, float | None, float | None]] = [
        ("memory", spec.memory, policy.max_memory),
        ("cpus", spec.cpus, policy.max_cpus),
        ("pids", spec.pids, policy.max_pids),
        ("timeout", spec.timeout, policy.max_timeout),
        ("workspace_size", spec.workspace_size, policy.max_workspace_size),
    ]
    for name, value, limit in limits:
        if _exceeds(value, limit):
            problems.append(
                f"{name} {_show(name, value)} is over {_show(name, limit)} ({where}.max_{name})"
            )
    if spec.network not in policy.networks:
        allowed = ", ".join(policy.networks)
        problems.append(f"network {spec.network!r} is not allowed ({where}.networks: {allowed})")
    image = spec.image or default_image
    if (
        "image" in asked
        and image != default_image
        and not any(re.fullmatch(pattern, image) for pattern in policy.images)
    ):
        problems.append(f"image {image!r} is not allowed ({where}.images)")
    if spec.workspace is not None and not policy.host_workspace:
        problems.append(f"a host workspace is not allowed ({where}.host_workspace)")
    if not spec.read_only_root and not policy.writable_root:
        problems.append(f"a writable root is not allowed ({where}.writable_root)")
    if spec.user == "root" and not policy.root_user:
        problems.append(f"running as root is not allowed ({where}.root_user)")
    if problems:
        raise PolicyViolation(
            f"this key's role ({role}) may not ask for that: " + "; ".join(problems)
        )
