"""GitHub's webhook: a signed delivery in, a run for an issue out (see
docs/github-trigger.md). Only deliveries signed with the secret in the variable
``[server.github] secret_env`` names are read; without that secret, none is."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request, Response, status

from golem.core.errors import Problem
from golem.service.api.webhooks import answered, lifespan, read_body, read_payload
from golem.service.automations import fire_event, github_failure, github_push
from golem.service.forge_names import GITHUB_DELIVERY
from golem.service.trigger import Ignored, Trigger, TriggerAnswer
from golem.service.trigger.github_events import read_delivery
from golem.store import DeliveryRecord

__all__ = ["router", "signature"]

log = logging.getLogger("golem.service.trigger")
DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,100}$")
COMMENTS = ("issue_comment", "pull_request_review", "pull_request_review_comment")
FORGE_EVENTS = {"workflow_run": github_failure, "push": github_push}
"""The deliveries that fire automations (docs/automations.md), each read by its reader."""

router = APIRouter(prefix="/v1/github", tags=["github"], lifespan=lifespan("github"))


def signature(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` GitHub sends with ``body``: ``sha256=`` and the hex
    HMAC-SHA256 of the raw body keyed with the webhook's secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@router.post(
    "/webhook",
    status_code=status.HTTP_202_ACCEPTED,
    responses={
        200: {
            "description": "ping; the run a delivery asked for exists already; or a duplicate "
            "of a delivery that started a run (``duplicate``, naming it)"
        },
        401: {"description": "missing or wrong X-Hub-Signature-256"},
        422: {"description": "a name the delivery gives is not one (the field is named)"},
        503: {"description": "no webhook secret is configured: every delivery is refused"},
    },
)
async def github_webhook(
    request: Request,
    response: Response,
    x_github_event: Annotated[str | None, Header()] = None,
    x_github_delivery: Annotated[str | None, Header()] = None,
    x_hub_signature_256: Annotated[str | None, Header()] = None,
) -> TriggerAnswer:
    """A delivery of a GitHub webhook (content type application/json): an issue labelled
    with ``[server.github] label``, or a new comment mentioning its ``handle``, starts a
    run for that issue; a review or comment on a pull request golem opened, by someone who
    may push, starts a follow-up run on it; a failed Actions run on the default branch
    (``workflow_run``), or a push to it (``push``), fires the automations watching it.
    Anything else is answered, and ignored with a reason. No API key: the signature of the
    body with the webhook's secret authenticates GitHub."""
    trigger: Trigger = request.app.state.github_trigger
    body = await _verified_body(request, trigger, x_hub_signature_256)
    if not x_github_event or not x_github_delivery or not DELIVERY_ID.match(x_github_delivery):
        raise Problem(400, "a delivery needs X-GitHub-Event and X-GitHub-Delivery headers")
    payload = read_payload(body, request.headers.get("content-type", ""), GITHUB_DELIVERY)
    delivery = DeliveryRecord(source="github", ids=(x_github_delivery,))
    if x_github_event in FORGE_EVENTS:  # a failed Actions run, a push: fire automations
        call = FORGE_EVENTS[x_github_event](payload)
        fired = (
            TriggerAnswer(status="ignored", reason=call.reason)
            if isinstance(call, Ignored)
            else await fire_event(request.app.state.automations, call, x_github_delivery)
        )
        answer = answered(response, fired)
    else:
        answer = answered(response, await _answer(trigger, x_github_event, delivery, payload))
    log.info(
        "GitHub delivery %s (%s): %s, %s",
        x_github_delivery,
        x_github_event,
        answer.status,
        answer.reason,
    )
    return answer


async def _answer(
    trigger: Trigger, event: str, delivery: DeliveryRecord, payload: Mapping[str, Any]
) -> TriggerAnswer:
    if event == "ping":
        return TriggerAnswer(status="ok", reason="pong: golem receives this webhook's deliveries")
    own = await trigger.reach.own_login() if event in COMMENTS else None
    call = read_delivery(event, payload, trigger.config, own)
    if isinstance(call, Ignored):
        return TriggerAnswer(status="ignored", reason=call.reason)
    return await trigger.start(call, delivery)


async def _verified_body(request: Request, trigger: Trigger, given: str | None) -> bytes:
    """The raw body, once its signature proves it came from GitHub."""
    name = trigger.config.secret_env
    secret = trigger.secret()
    if secret is None:
        raise Problem(
            503,
            f"the GitHub trigger has no webhook secret, so it refuses every delivery: set "
            f"${name} ([server.github] secret_env) to the webhook's secret and restart "
            "golem serve",
        )
    if not given:
        raise Problem(401, "the delivery has no X-Hub-Signature-256: give the webhook a secret")
    body = await read_body(request)
    if not hmac.compare_digest(signature(secret, body).encode(), given.encode()):
        raise Problem(
            401,
            "X-Hub-Signature-256 does not match the body: the webhook's secret on GitHub and "
            f"${name} differ",
        )
    return body
