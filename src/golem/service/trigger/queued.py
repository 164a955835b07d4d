"""A forge's follow-up request asked while its pull request's run was running, as the
store keeps it (``store.pending``) and back: one per person and pull request, its words
masked with the secrets the server knows, with the delivery that asked (so that the same
delivery again, once the follow-up started, is a duplicate)."""

from __future__ import annotations

import json

from golem.core.masking import mask_text
from golem.service.trigger.calls import ReviewCall
from golem.store import DeliveryRecord, PendingRecord

__all__ = ["asked_again", "kept"]

REQUEST_MAX = 60000  # characters of a request kept (the record takes 65536)


def kept(
    source: str, call: ReviewCall, delivery: DeliveryRecord, run_id: str, secrets: list[str]
) -> PendingRecord:
    """The pending request ``call`` makes while ``run_id`` runs."""
    detail = {
        "repo": call.repo,
        "number": call.number,
        "why": call.why,
        "thread": call.thread,
        "delivery": [delivery.source, *delivery.ids],
    }
    return PendingRecord(
        source=source,
        thread=call.key,
        person=call.user[:128],
        run_id=run_id,
        asked_by=call.sender[:128],
        request=mask_text(call.request, secrets)[:REQUEST_MAX],
        detail=json.dumps(detail),
    )


def asked_again(request: PendingRecord) -> tuple[ReviewCall, DeliveryRecord]:
    """The call and delivery ``request`` was kept from (its words as kept: masked)."""
    detail = json.loads(request.detail)
    source, *ids = detail["delivery"]
    call = ReviewCall(
        repo=detail["repo"],
        number=int(detail["number"]),
        sender=request.asked_by,
        user=request.person,
        why=detail["why"],
        thread=detail["thread"],
        request=request.request,
    )
    return call, DeliveryRecord(source=source, ids=tuple(ids))
