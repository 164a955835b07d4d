"""A Linear comment asking golem while its issue's run is in progress, as the store keeps it
(``store.pending``) and back: one per person and issue, its words masked with the secrets
the server knows, with the delivery that asked (so that Linear's retry of it, once the
request started, is a duplicate)."""

from __future__ import annotations

import json

from golem.core.masking import mask_text
from golem.service.linear.deliveries import LinearCall
from golem.service.linear.reporter import SOURCE
from golem.store import DeliveryRecord, PendingRecord

__all__ = ["asked_again", "kept"]

REQUEST_MAX = 60000  # characters of a request kept (the record takes 65536)


def kept(
    call: LinearCall, delivery: DeliveryRecord, run_id: str, secrets: list[str]
) -> PendingRecord:
    """The pending request ``call`` (a comment, by ``call.actor_id``) makes while
    ``run_id`` runs."""
    detail = {
        "why": call.why,
        "session_id": call.session_id,
        "delivery": [delivery.source, *delivery.ids],
    }
    return PendingRecord(
        source=SOURCE,
        thread=call.issue_id,
        person=(call.actor_id or call.actor or "linear")[:128],
        run_id=run_id,
        asked_by=call.actor[:128],
        request=mask_text(call.request, secrets)[:REQUEST_MAX],
        detail=json.dumps(detail),
    )


def asked_again(request: PendingRecord) -> tuple[LinearCall, DeliveryRecord]:
    """The call and delivery ``request`` was kept from (its words as kept: masked)."""
    detail = json.loads(request.detail)
    source, *ids = detail["delivery"]
    call = LinearCall(
        issue_id=request.thread,
        why=detail["why"],
        actor_id=request.person,
        actor=request.asked_by,
        session_id=detail["session_id"],
        request=request.request,
    )
    return call, DeliveryRecord(source=source, ids=tuple(ids))
