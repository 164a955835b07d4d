"""Server-side policy: what a key's role may ask of a box and of a call, field by field.

Every field of ``BoxSpec`` and of ``ExecRequest`` has an entry in ``SPEC_RULES`` or
``CALL_RULES``; a field without one is refused (and the test suite fails), so nothing a
request says passes through unchecked. A request beyond its role's policy is refused with
an error naming the policy option; nothing is quietly lowered, and options the API does
not offer (seccomp, capabilities, the backend) cannot be asked for at all."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from golem.core.errors import PolicyViolation, RemoteRefused
from golem.core.isolation import Floor, IsolationTier
from golem.core.network import EgressPolicy, NetworkConfig, RemotePolicy
from golem.core.server_config import RolePolicy
from golem.core.sizes import format_size
from golem.core.spec import SERVER_LABELS, BoxSpec, parse_user
from golem.forge import pin_remote
from golem.sandbox import ExecRequest
from golem.service.trust import refusal

if TYPE_CHECKING:
    from golem.blueprint import RunRequest

__all__ = [
    "CALL_RULES",
    "RUN_RULES",
    "SPEC_RULES",
    "check_call",
    "check_repo",
    "check_run",
    "check_spec",
]


@dataclass(frozen=True)
class Context:
    """What a rule weighs a field against: the role's policy, and what the request set."""

    policy: RolePolicy
    role: str
    asked: frozenset[str] = frozenset()
    default_image: str = ""
    floor: Floor | None = None
    """The least isolation tier the trust policy gives the request (``service.trust``)."""

    def option(self, name: str) -> str:
        """The full name of a policy option, as errors show it."""
        return f"server.policies.{self.role}.{name}"


Rule = Callable[[Any, Context], list[str]]
"""A field's value and the context in, what is wrong with it out (empty: allowed)."""


def _show(value: float | None, *, size: bool) -> str:
    if value is None:
        return "no limit"
    return format_size(int(value)) if size else f"{value:g}"


def _cap(option: str, *, size: bool = False, unset_ok: bool = False) -> Rule:
    """At most the role's ``option``; None asks for no cap (beyond any), unless
    ``unset_ok`` (None then means the box's own value applies)."""

    def rule(value: float | None, ctx: Context) -> list[str]:
        limit = getattr(ctx.policy, option)
        if limit is None or (value is None and unset_ok):
            return []
        if value is not None and value <= limit:
            return []
        shown, cap = _show(value, size=size), _show(limit, size=size)
        return [f"{shown} is over {cap} ({ctx.option(option)})"]

    return rule


def _allowed(_value: Any, _ctx: Context) -> list[str]:
    """Runs inside the box as the box's user, so any value is the box's own business;
    its size is bounded by the request's (``max_body_bytes``)."""
    return []


def _pairs_bytes(value: Mapping[str, Any]) -> int:
    return sum(len(name.encode()) + len(_text(item).encode()) for name, item in value.items())


def _text(item: Any) -> str:
    getter = getattr(item, "get_secret_value", None)
    return str(getter() if getter is not None else item)


def _env(value: Mapping[str, Any], ctx: Context) -> list[str]:
    return _cap("max_env_bytes", size=True)(_pairs_bytes(value), ctx)


def _labels(value: Mapping[str, str], ctx: Context) -> list[str]:
    problems = _cap("max_label_bytes", size=True)(_pairs_bytes(value), ctx)
    reserved = sorted(name for name in value if name.startswith(SERVER_LABELS))
    if reserved and not ctx.policy.server_labels:
        problems.append(
            f"{', '.join(reserved)}: golem.* labels are the server's, they mark what a box "
            f"belongs to ({ctx.option('server_labels')})"
        )
    return problems


def _image(value: str | None, ctx: Context) -> list[str]:
    image = value or ctx.default_image
    if "image" not in ctx.asked or image == ctx.default_image:
        return []  # the server's own default is the operator's choice
    if any(re.fullmatch(pattern, image) for pattern in ctx.policy.images):
        return []
    return [f"{image!r} is not allowed ({ctx.option('images')})"]


def _flag(option: str, allowed: Callable[[Any], bool], what: str) -> Rule:
    """Refused unless the value is ``allowed`` or the role's ``option`` is true."""

    def rule(value: Any, ctx: Context) -> list[str]:
        if allowed(value) or getattr(ctx.policy, option):
            return []
        return [f"{what} is not allowed ({ctx.option(option)})"]

    return rule


def _user(value: str, ctx: Context) -> list[str]:
    if ctx.policy.root_user or 0 not in parse_user(value):
        return []
    return [f"{value!r} runs as root (uid or gid 0) ({ctx.option('root_user')})"]


def _network(value: str, ctx: Context) -> list[str]:
    if value in ctx.policy.networks:
        return []
    allowed = ", ".join(ctx.policy.networks)
    return [f"{value!r} is not allowed ({ctx.option('networks')}: {allowed})"]


def _egress(value: EgressPolicy, ctx: Context) -> list[str]:
    """The ranges and ports a filtered box may open. Host name patterns may be anything:
    the proxy checks every address a name resolves to (private ranges refused unless
    ``allow_cidrs`` opens them)."""
    if "egress" not in ctx.asked:
        return []  # the server's [engine.defaults.egress] is the operator's choice
    problems: list[str] = []
    cidrs, ports = ctx.policy.egress_cidrs, ctx.policy.egress_ports
    if cidrs is not None:
        for cidr in value.allow_cidrs:
            if not any(_inside(cidr, allowed) for allowed in cidrs):
                shown = ", ".join(cidrs) or "none"
                problems.append(
                    f"allow_cidrs {cidr} is not inside a range allowed "
                    f"({ctx.option('egress_cidrs')}: {shown})"
                )
    if ports is not None and (extra := sorted(set(value.ports) - set(ports))):
        problems.append(
            f"ports {', '.join(map(str, extra))} are not allowed "
            f"({ctx.option('egress_ports')}: {', '.join(map(str, ports))})"
        )
    return problems


def _inside(cidr: str, allowed: str) -> bool:
    """Whether range ``cidr`` lies wholly inside range ``allowed`` (same IP version)."""
    asked = ipaddress.ip_network(cidr, strict=False)
    outer = ipaddress.ip_network(allowed, strict=False)
    if isinstance(asked, ipaddress.IPv4Network) and isinstance(outer, ipaddress.IPv4Network):
        return asked.subnet_of(outer)
    if isinstance(asked, ipaddress.IPv6Network) and isinstance(outer, ipaddress.IPv6Network):
        return asked.subnet_of(outer)
    return False


def _tier(value: IsolationTier | None, ctx: Context) -> list[str]:
    """Raise-only: never weaker than the least tier the trust policy gives the request."""
    if "tier" not in ctx.asked:
        return []  # the server's default is the operator's choice, raised to the floor
    problem = refusal(value, ctx.floor)
    return [problem] if problem is not None else []


SPEC_RULES: dict[str, Rule] = {
    "image": _image,
    "workdir": _allowed,  # BoxSpec keeps it inside /workspace
    "env": _env,
    "cpus": _cap("max_cpus"),
    "memory": _cap("max_memory", size=True),
    "pids": _cap("max_pids"),
    "timeout": _cap("max_timeout"),
    "idle_timeout": _cap("max_timeout", unset_ok=True),
    "max_output_bytes": _cap("max_output_bytes", size=True),
    "max_file_bytes": _cap("max_file_bytes", size=True),
    "max_takeback_bytes": _cap("max_takeback_bytes", size=True),
    "workspace": _flag("host_workspace", lambda v: v is None, "a host directory"),
    "workspace_size": _cap("max_workspace_size", size=True),
    "tmp_size": _cap("max_tmp_size", size=True),
    "read_only_root": _flag("writable_root", bool, "a writable root file system"),
    "user": _user,
    "network": _network,
    "egress": _egress,
    "credentials": _allowed,  # every box's default is true; false only takes brokering away
    "secrets": _env,
    "setup": _allowed,
    "labels": _labels,
    "containers": _flag("containers", lambda v: not v, "a private container engine"),
    "tier": _tier,
    "snapshot": _allowed,  # found only among the session's tenant's (its golem.tenant label)
}
"""The rule of every BoxSpec field."""


def _return_files(value: list[str], ctx: Context) -> list[str]:
    return _cap("max_return_files")(len(value), ctx)


CALL_RULES: dict[str, Rule] = {
    "cmd": _allowed,
    "code": _allowed,
    "runtime": _allowed,
    "filename": _allowed,
    "tool": _allowed,  # the box's read-only file tools, run as the box's user
    "stdin": _allowed,
    "env": _env,
    "workdir": _allowed,  # the box keeps it inside /workspace
    "timeout": _cap("max_timeout", unset_ok=True),
    "idle_timeout": _cap("max_timeout", unset_ok=True),
    "files": _allowed,  # written into the box's own tmpfs, bounded by the body
    "return_files": _return_files,
}
"""The rule of every ExecRequest field (its box's spec was checked when it was made)."""


def _refuse(values: Mapping[str, Any], rules: Mapping[str, Rule], ctx: Context) -> None:
    problems: list[str] = []
    for name, value in values.items():
        rule = rules.get(name)
        if rule is None:  # a field added without a rule: refused, never passed through
            problems.append(f"{name}: the server has no rule for it; it cannot be asked for")
            continue
        problems += [f"{name}: {problem}" for problem in rule(value, ctx)]
    if problems:
        raise PolicyViolation(
            f"this key's role ({ctx.role}) may not ask for that: " + "; ".join(problems)
        )


def check_spec(
    spec: BoxSpec,
    asked: Mapping[str, Any],
    policy: RolePolicy,
    role: str,
    default_image: str,
    floor: Floor | None = None,
) -> None:
    """Refuse ``spec`` (the effective box) when ``policy`` does not allow it, or it asks
    for a tier weaker than ``floor``; ``asked`` is what the request set itself, so that the
    server's own defaults of an image, an egress policy or a tier are never held against it."""
    ctx = Context(policy, role, frozenset(asked), default_image, floor)
    _refuse({name: getattr(spec, name) for name in type(spec).model_fields}, SPEC_RULES, ctx)


def check_call(request: ExecRequest, policy: RolePolicy, role: str) -> None:
    """Refuse a call beyond the role's policy (its time limits, env, files asked back)."""
    ctx = Context(policy, role)
    values = {name: getattr(request, name) for name in type(request).model_fields}
    _refuse(values, CALL_RULES, ctx)


REMOTE_REPO = re.compile(r"^(https?|ssh|git)://|^[\w.-]+@[\w.-]+:")
ISSUE_REFERENCE = re.compile(r"^https?://|^[\w.-]+/[\w.-]+#\d+$")


async def check_repo(
    url: str, repos: RemotePolicy, role: str, network: NetworkConfig | None = None
) -> None:
    """Refuse a run's repository URL that the role's ``repos`` policy does not let git
    reach: checked as the egress proxy checks a box's destinations (scheme, host, port,
    every address the name resolves to), before the run is queued. The run keeps the
    policy, and git is held to it again wherever it connects."""
    try:
        await pin_remote([url], repos, network)
    except RemoteRefused as exc:
        reason, rule = exc.reason, exc.rule
        if exc.resolved and not repos.git_errors:
            # What a name resolves to (or that it does not) would map the server's own
            # network for whoever asks: one answer for both, no address shown.
            reason = f"{url!r}: its host does not resolve to an address this role may reach"
            rule = "allow_cidrs"
        raise PolicyViolation(
            f"this key's role ({role}) may not have the server reach that repository: "
            f"{reason} (server.policies.{role}.repos.{rule})"
        ) from None


@dataclass(frozen=True)
class RunContext:
    """What a run's fields are weighed against: the built-in blueprints, the forge the
    run uses."""

    builtins: tuple[str, ...]
    forge: str


RunRule = Callable[[Any, RunContext], str | None]
"""A run field's value in; the file on the server it names out (None: none)."""


def _repo(value: str, _ctx: RunContext) -> str | None:
    if REMOTE_REPO.match(value):
        return None  # reached as the role's repos policy says (check_repo)
    return f"repository {value!r} (give an https or ssh git URL)"


def _issue(value: str | None, ctx: RunContext) -> str | None:
    if value is not None and not ISSUE_REFERENCE.match(value):
        return f"issue {value!r} (give owner/name#N or a URL)"
    if value is not None and ctx.forge == "local":
        return f"issue {value!r} (the local forge reads issues from files)"
    return None


def _blueprint(value: str, ctx: RunContext) -> str | None:
    if value in ctx.builtins:
        return None
    return f"blueprint {value!r} (built-in: {', '.join(ctx.builtins)})"


def _model(value: str | None, _ctx: RunContext) -> str | None:
    return f"model {value!r}" if value is not None and value.startswith("scripted:") else None


def _names_nothing(_value: Any, _ctx: RunContext) -> str | None:
    """Words, a forge's name, a branch (git checks it), dollars (a budget only lowers
    what the blueprint's own allows): nothing on the server."""
    return None


RUN_RULES: dict[str, RunRule] = {
    "repo": _repo,
    "task": _names_nothing,
    "issue": _issue,
    "blueprint": _blueprint,
    "model": _model,
    "forge": _names_nothing,
    "budget_usd": _names_nothing,
    "base": _names_nothing,
    "follow_up": _names_nothing,  # a pull request on the run's forge, the tenant's parent run
    "tier": _names_nothing,  # raise-only: weighed against the trust policy (service.trust)
    "goal_check": _names_nothing,  # a command in the run's own box, as the agent's are
    "attempts": _names_nothing,  # boxes of the run's own, within [engine] max_attempts
}
"""The rule of every RunRequest field (``server_files``; the repository's reach is
``check_repo``'s)."""


def check_run(
    request: RunRequest,
    policy: RolePolicy,
    role: str,
    builtins: tuple[str, ...],
    *,
    default_forge: str = "local",
) -> None:
    """Refuse a run that names files on the server when the role may not (the local
    forge, ``default_forge`` unless the request names one, reads issues from files), and
    any field without a rule."""
    ctx = RunContext(builtins, request.forge or default_forge)
    named: list[str] = []
    for name in type(request).model_fields:
        rule = RUN_RULES.get(name)
        if rule is None:
            raise PolicyViolation(
                f"this key's role ({role}) may not ask for that: {name}: the server has no "
                "rule for it; it cannot be asked for"
            )
        if (found := rule(getattr(request, name), ctx)) is not None:
            named.append(found)
    if named and not policy.server_files:
        raise PolicyViolation(
            f"this key's role ({role}) may not name files on the server "
            f"({_option(role, 'server_files')}): " + "; ".join(named)
        )


def _option(role: str, name: str) -> str:
    return f"server.policies.{role}.{name}"
