"""A run a chat or tracker source asks for, queued as any run: on behalf of the person the
source's configuration maps to a tenant and a role, held to that role's policy for what
the person chose (the repository's reach: ``server.policies.<role>.repos``), in the tier
the trust policy gives it (weighed by the queue: the role's, the tenant's, the repository's,
the source's, and the outsiders' with ``outsider``, why someone outside wrote what it
reads), kept with the delivery that asked
for it and the thread it reports to. What the operator configured for the source (its
blueprint, model, repositories' URLs) is the operator's, as a forge trigger's is."""

from __future__ import annotations

from golem.blueprint import RunRequest, RunState
from golem.service.forge_names import check_run_names
from golem.service.keys import Principal
from golem.service.policy import check_repo
from golem.service.state import ServerState
from golem.store import DeliveryRecord, PendingRecord, ThreadRecord

__all__ = ["submit_from_source"]


async def submit_from_source(
    state: ServerState,
    principal: Principal,
    request: RunRequest,
    *,
    delivery: DeliveryRecord,
    thread: ThreadRecord,
    outsider: str | None = None,
    pending: PendingRecord | None = None,
) -> RunState:
    """Queue ``request`` for ``principal``: PolicyViolation (the repository out of the
    role's reach), NameRefused, QueueFull, NoTierBackend or DuplicateDelivery when it
    cannot be; with ``pending``, the queued request it answers, claimed with it
    (PendingTaken: started already, on any server)."""
    config = state.config
    policy = config.server.policies[principal.role]
    check_run_names(request, request.forge or config.forge.provider)
    if policy.repos is not None:
        await check_repo(request.repo, policy.repos, principal.role, config.engine.network)
    return await state.queue.submit(
        request,
        principal.tenant,
        role=principal.role,
        remote_policy=policy.repos,
        outsider=outsider,
        containers=policy.containers,
        delivery=delivery,
        thread=thread,
        pending=pending,
    )
