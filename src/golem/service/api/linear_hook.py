"""Linear's webhook: a signed delivery in, a run for an issue out (docs/linear.md). Only
deliveries whose ``Linear-Signature`` is the HMAC-SHA256 of the raw body with the secret in
the variable ``[server.linear] secret_env`` names are read (without that secret, none is);
one whose ``webhookTimestamp`` lies further than ``replay_window`` from this server's clock
is refused as a replay; each ``Linear-Delivery`` starts one run at most."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Header, Request, Response, status

from golem.core.errors import Problem
from golem.service.api.webhooks import answered, read_body, read_payload
from golem.service.linear import LinearTrigger, read_delivery
from golem.service.trigger import Ignored, TriggerAnswer
from golem.store import DeliveryRecord

__all__ = ["router", "signature"]

log = logging.getLogger("golem.service.linear")
DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,100}$")


@asynccontextmanager
async def _following(app: FastAPI) -> AsyncIterator[None]:
    trigger = LinearTrigger(app.state.golem)
    app.state.linear_trigger = trigger
    trigger.follow_previous()
    try:
        yield
    finally:
        await trigger.close()


router = APIRouter(prefix="/v1/linear", tags=["linear"], lifespan=_following)


def signature(secret: str, body: bytes) -> str:
    """The ``Linear-Signature`` Linear sends with ``body``: the hex HMAC-SHA256 of the raw
    body keyed with the webhook's signing secret."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@router.post(
    "/webhook",
    status_code=status.HTTP_202_ACCEPTED,
    responses={
        200: {"description": "a duplicate of a delivery that started a run (naming it)"},
        401: {"description": "a missing or wrong Linear-Signature, or a replay"},
        503: {"description": "no webhook secret is configured: every delivery is refused"},
    },
)
async def linear_webhook(
    request: Request,
    response: Response,
    linear_signature: Annotated[str | None, Header()] = None,
    linear_delivery: Annotated[str | None, Header()] = None,
    linear_event: Annotated[str | None, Header()] = None,
) -> TriggerAnswer:
    """A delivery of a Linear webhook (or an agent app's): an issue newly assigned to
    golem's user or given ``[server.linear] label``, a new comment mentioning its
    ``handle``, or an agent session created on an issue starts a run for that issue.
    Anything else is answered, and ignored with a reason. No API key: the signature of the
    body with the webhook's secret authenticates Linear."""
    trigger: LinearTrigger = request.app.state.linear_trigger
    body = await _verified_body(request, trigger, linear_signature)
    if not linear_delivery or not DELIVERY_ID.match(linear_delivery):
        raise Problem(400, "a delivery needs a Linear-Delivery header (its id)")
    payload = read_payload(body, request.headers.get("content-type", ""), {})
    _fresh(payload, trigger.config.replay_window)
    known = payload.get("type") in ("Issue", "Comment")  # golem's own never start runs
    agent = await trigger.agent_id() if known else trigger.config.user_id
    call = read_delivery(payload, trigger.config, agent)
    if isinstance(call, Ignored):
        answer = TriggerAnswer(status="ignored", reason=call.reason)
    else:
        answer = await trigger.start(call, DeliveryRecord(source="linear", ids=(linear_delivery,)))
    log.info(
        "Linear delivery %s (%s): %s, %s",
        linear_delivery,
        linear_event,
        answer.status,
        answer.reason,
    )
    return answered(response, answer)


async def _verified_body(request: Request, trigger: LinearTrigger, given: str | None) -> bytes:
    """The raw body, once its signature proves it came from Linear."""
    name = trigger.config.secret_env
    secret = trigger.secret()
    if secret is None:
        raise Problem(
            503,
            f"the Linear trigger has no webhook secret, so it refuses every delivery: set "
            f"${name} ([server.linear] secret_env) to the webhook's signing secret and "
            "restart golem serve",
        )
    if not given:
        raise Problem(401, "the delivery has no Linear-Signature: give the webhook a secret")
    body = await read_body(request)
    if not hmac.compare_digest(signature(secret, body).encode(), given.strip().encode()):
        raise Problem(
            401,
            f"Linear-Signature does not match the body: the webhook's secret on Linear and "
            f"${name} differ",
        )
    return body


def _fresh(payload: Mapping[str, Any], window: float) -> None:
    """Refuse a delivery sent longer ago (or later) than ``window`` seconds: a replay."""
    stamp = payload.get("webhookTimestamp")
    if not isinstance(stamp, (int, float)) or isinstance(stamp, bool):
        raise Problem(401, "the delivery has no webhookTimestamp: it cannot be told fresh")
    lag = abs(time.time() - stamp / 1000)
    if lag > window:
        raise Problem(
            401,
            f"the delivery was sent {lag:.0f}s from this server's clock, more than "
            f"[server.linear] replay_window ({window:g}s): refused as a replay",
        )
