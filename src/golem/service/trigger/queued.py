"""A forge's request asked while its thread's run was running (a follow-up on a pull
request, a mention on an issue), as the store keeps it (``store.pending``) and back: one
per person and thread, its words masked with the secrets the server knows, with the
delivery that asked (so that the same delivery again, once the request started, is a
duplicate)."""

from __future__ import annotations

import json

from golem.core.masking import mask_text
from golem.service.trigger.calls import Call, IssueCall, ReviewCall
from golem.store import DeliveryRecord, PendingRecord

__all__ = ["asked_again", "kept"]

REQUEST_MAX = 60000  # characters of a request kept (the record takes 65536)


def kept(
    source: str, call: Call, delivery: DeliveryRecord, run_id: str, secrets: list[str]
) -> PendingRecord:
    """The pending request ``call`` makes while ``run_id`` runs."""
    detail: dict[str, object] = {
        "repo": call.repo,
        "number": call.number,
        "why": call.why,
        "delivery": [delivery.source, *delivery.ids],
    }
    if isinstance(call, IssueCall):
        detail.update(kind="issue", member=call.member)
    else:
        detail.update(thread=call.thread)
    return PendingRecord(
        source=source,
        thread=call.key,
        person=call.person[:128],
        run_id=run_id,
        asked_by=call.sender[:128],
        request=mask_text(call.request or "", secrets)[:REQUEST_MAX],
        detail=json.dumps(detail),
    )


def asked_again(request: PendingRecord) -> tuple[Call, DeliveryRecord]:
    """The call and delivery ``request`` was kept from (its words as kept: masked)."""
    detail = json.loads(request.detail)
    source, *ids = detail["delivery"]
    delivery = DeliveryRecord(source=source, ids=tuple(ids))
    if detail.get("kind") == "issue":
        issue = IssueCall(
            repo=detail["repo"],
            number=int(detail["number"]),
            sender=request.asked_by,
            why=detail["why"],
            member=detail.get("member"),
            request=request.request,
        )
        return issue, delivery
    call = ReviewCall(
        repo=detail["repo"],
        number=int(detail["number"]),
        sender=request.asked_by,
        user=request.person,
        why=detail["why"],
        thread=detail["thread"],
        request=request.request,
    )
    return call, delivery
