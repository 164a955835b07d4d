"""Server-side policy: what a key's role may ask of a box. A request beyond it is refused
with an error that names the policy; nothing is quietly lowered, and options the API does
not offer (seccomp, capabilities, the backend) cannot be asked for at all."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from golem.core.errors import GolemError
from golem.core.server_config import RolePolicy
from golem.core.sizes import format_size
from golem.core.spec import BoxSpec
from golem.sandbox import ExecRequest

if TYPE_CHECKING:
    from golem.blueprint import RunRequest

__all__ = ["PolicyViolation", "check_call", "check_run", "check_spec"]


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
    if spec.is_root and not policy.root_user:
        problems.append(f"running as root is not allowed ({where}.root_user)")
    if problems:
        raise PolicyViolation(
            f"this key's role ({role}) may not ask for that: " + "; ".join(problems)
        )


def check_call(request: ExecRequest, policy: RolePolicy, role: str) -> None:
    """Refuse a call whose own timeout is over the role's cap."""
    if _exceeds(request.timeout, policy.max_timeout) and request.timeout is not None:
        raise PolicyViolation(
            f"this key's role ({role}) may not ask for that: timeout "
            f"{_show('timeout', request.timeout)} is over {_show('timeout', policy.max_timeout)} "
            f"(server.policies.{role}.max_timeout)"
        )


REMOTE_REPO = re.compile(r"^(https?|ssh|git)://|^[\w.-]+@[\w.-]+:")
ISSUE_REFERENCE = re.compile(r"^https?://|^[\w.-]+/[\w.-]+#\d+$")


def check_run(
    request: RunRequest, policy: RolePolicy, role: str, builtins: tuple[str, ...]
) -> None:
    """Refuse a run that names files on the server when the role may not."""
    if policy.server_files:
        return
    named: list[str] = []
    if not REMOTE_REPO.match(request.repo):
        named.append(f"repository {request.repo!r} (give an https or ssh git URL)")
    if request.blueprint not in builtins:
        named.append(f"blueprint {request.blueprint!r} (built-in: {', '.join(builtins)})")
    if request.issue is not None and not ISSUE_REFERENCE.match(request.issue):
        named.append(f"issue {request.issue!r} (give owner/name#N or a URL)")
    if request.model is not None and request.model.startswith("scripted:"):
        named.append(f"model {request.model!r}")
    if named:
        raise PolicyViolation(
            f"this key's role ({role}) may not name files on the server "
            f"(server.policies.{role}.server_files): " + "; ".join(named)
        )
