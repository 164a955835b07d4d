"""The trust policy: the least isolation tier of a source of work, and the tier a request
gets. Every rule that applies to a session or a run is weighed (its key's role, its tenant,
the repository it works on, the trigger that started it); the strongest wins, and names
itself. A request may ask for a stronger tier, never a weaker one: that is refused (403)
naming the rule, never quietly raised. What the request leaves unsaid is raised to the
least tier. On a Ray cluster the tier a run or session gets is also the ``golem-tier``
label of the nodes it is placed on (``golem.cluster.placement``): one setting."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from golem.core.config import GolemConfig
from golem.core.errors import PolicyViolation
from golem.core.isolation import Floor, IsolationTier, at_least, strongest

__all__ = ["check_tier", "floor_for", "refusal", "repository_name", "tier_for"]

SCP_LIKE = re.compile(r"^[\w.-]+@(?P<host>[\w.-]+):(?P<path>.*)$")


def repository_name(repo: str) -> str:
    """What ``server.trust.repos`` patterns match: a remote's host and path without its
    scheme, user, port or ``.git`` (``https://x@github.com/acme/w.git`` and
    ``git@github.com:acme/w.git`` are ``github.com/acme/w``), a local repository's path."""
    scp = SCP_LIKE.match(repo)
    if scp is not None:
        host, path = scp["host"], scp["path"]
    elif "://" in repo:
        parts = urlsplit(repo)
        host, path = (parts.hostname or "").lower(), parts.path
    else:
        host, path = "", repo
    name = path.strip("/").removesuffix(".git").rstrip("/")
    if host:
        return f"{host.lower()}/{name}"
    return "/" + name if path.startswith("/") else name


def floor_for(
    config: GolemConfig,
    *,
    tenant: str,
    role: str | None = None,
    repo: str | None = None,
    source: str | None = None,
    outsiders: bool = False,
) -> Floor | None:
    """The least tier of a session or run of ``tenant``: asked with a key of ``role`` (a
    Slack user's mapped role too; None: started by a forge's trigger), on ``repo`` (a
    run's), started by the trigger of ``source`` (github, gitlab, slack), with an author
    from outside in what it reads (``outsiders``: a trigger's run); None when no rule
    applies."""
    trust = config.server.trust
    floors: list[Floor | None] = []
    if role is not None and (least := config.server.policies[role].min_tier) is not None:
        floors.append(Floor(least, f"server.policies.{role}.min_tier"))
    if (least := trust.tenants.get(tenant)) is not None:
        floors.append(Floor(least, f"server.trust.tenants.{tenant}"))
    if source is not None and (least := trust.sources.get(source)) is not None:
        floors.append(Floor(least, f"server.trust.sources.{source}"))
    if outsiders and trust.outsiders is not None:
        floors.append(Floor(trust.outsiders, "server.trust.outsiders"))
    if repo is not None:
        name = repository_name(repo)
        for number, rule in enumerate(trust.repos):
            if re.fullmatch(rule.pattern, name):
                shown = f"server.trust.repos[{number}] ({rule.pattern})"
                floors.append(Floor(rule.min_tier, shown))
    return strongest(floors)


def refusal(asked: IsolationTier | None, floor: Floor | None) -> str | None:
    """Why asking for ``asked`` breaks ``floor`` (None: it does not)."""
    if asked is None or floor is None or at_least(asked, floor.tier):
        return None
    return f"{asked!r} is weaker than {floor.tier!r}, the least this may run in ({floor.rule})"


def check_tier(asked: IsolationTier | None, floor: Floor | None, who: str) -> None:
    """PolicyViolation (403) naming the rule when ``asked`` is weaker than ``floor``;
    ``who`` says whose request it is (``this key's role (user)``, ``the GitHub trigger``)."""
    problem = refusal(asked, floor)
    if problem is not None:
        raise PolicyViolation(f"{who} may not ask for that: tier: {problem}")


def tier_for(
    tier: IsolationTier | None, floor: Floor | None, default: IsolationTier
) -> IsolationTier | None:
    """The tier a request gets: ``tier`` (what it asked, or a default of the server's;
    None: the default backend's, ``default``) raised to ``floor``; a tier asked weaker than
    the floor was refused before (``check_tier``), so only a default is ever raised."""
    if floor is None:
        return tier
    got = tier or default
    return got if at_least(got, floor.tier) else floor.tier
