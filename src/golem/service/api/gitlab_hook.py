"""GitLab's webhook: a delivery with the secret token in, a run for an issue or a follow-up
on a merge request out (see docs/gitlab-trigger.md). Only deliveries whose
``X-Gitlab-Token`` is the secret in the variable ``[server.gitlab] secret_env`` names are
read; without that secret, none is."""

from __future__ import annotations

import hmac
import logging
import re
from typing import Annotated

from fastapi import APIRouter, Header, Request, Response, status

from golem.core.errors import Problem
from golem.service.api.webhooks import answered, lifespan, read_body, read_payload
from golem.service.automations import fire_event, gitlab_failure, gitlab_push
from golem.service.forge_names import GITLAB_DELIVERY
from golem.service.trigger import Ignored, Trigger, TriggerAnswer
from golem.service.trigger.gitlab_events import read_delivery
from golem.store import DeliveryRecord

__all__ = ["router"]

log = logging.getLogger("golem.service.trigger")
DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,100}$")

FORGE_EVENTS = {"Pipeline Hook": gitlab_failure, "Push Hook": gitlab_push}
"""The deliveries that fire automations (docs/automations.md), each read by its reader."""

router = APIRouter(prefix="/v1/gitlab", tags=["gitlab"], lifespan=lifespan("gitlab"))


@router.post(
    "/webhook",
    status_code=status.HTTP_202_ACCEPTED,
    responses={
        200: {
            "description": "the run a delivery asked for exists already, or a duplicate of a "
            "delivery that started a run (``duplicate``, naming it)"
        },
        401: {"description": "missing or wrong X-Gitlab-Token"},
        503: {"description": "no webhook secret is configured: every delivery is refused"},
    },
)
async def gitlab_webhook(
    request: Request,
    response: Response,
    x_gitlab_event: Annotated[str | None, Header()] = None,
    x_gitlab_token: Annotated[str | None, Header()] = None,
    x_gitlab_event_uuid: Annotated[str | None, Header()] = None,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> TriggerAnswer:
    """A delivery of a GitLab webhook: an issue given ``[server.gitlab] label``, or a new
    note on an issue mentioning its ``handle``, starts a run for that issue; a note on a
    merge request golem opened, by someone who may push, starts a follow-up run on it; a
    failed pipeline on the default branch, or a push to it, fires the automations watching
    it. Anything else is answered, and ignored with a reason. No API key: the webhook's
    secret token authenticates GitLab."""
    trigger: Trigger = request.app.state.gitlab_trigger
    _check_token(trigger, x_gitlab_token)
    body = await read_body(request)
    ids = tuple(given for given in (idempotency_key, x_gitlab_event_uuid) if given)
    if not x_gitlab_event or not ids or not all(DELIVERY_ID.match(given) for given in ids):
        raise Problem(
            400, "a delivery needs X-Gitlab-Event and X-Gitlab-Event-UUID (or Idempotency-Key)"
        )
    delivery = DeliveryRecord(source="gitlab", ids=ids)
    payload = read_payload(body, request.headers.get("content-type", ""), GITLAB_DELIVERY)
    if x_gitlab_event in FORGE_EVENTS:  # a failed pipeline, a push: fire automations
        event = FORGE_EVENTS[x_gitlab_event](payload)
        if isinstance(event, Ignored):
            answer = TriggerAnswer(status="ignored", reason=event.reason)
        else:
            answer = await fire_event(request.app.state.automations, event, ids[0])
        return answered(response, answer)
    own = await trigger.reach.own_login() if x_gitlab_event == "Note Hook" else None
    call = read_delivery(x_gitlab_event, payload, trigger.config, own)
    if isinstance(call, Ignored):
        answer = TriggerAnswer(status="ignored", reason=call.reason)
    else:
        answer = await trigger.start(call, delivery)
    log.info(
        "GitLab delivery %s (%s): %s, %s", ids[0], x_gitlab_event, answer.status, answer.reason
    )
    return answered(response, answer)


def _check_token(trigger: Trigger, given: str | None) -> None:
    """Refuse the delivery unless its token is the webhook's secret."""
    name = trigger.config.secret_env
    secret = trigger.secret()
    if secret is None:
        raise Problem(
            503,
            f"the GitLab trigger has no webhook secret, so it refuses every delivery: set "
            f"${name} ([server.gitlab] secret_env) to the webhook's secret token and restart "
            "golem serve",
        )
    if not given:
        raise Problem(401, "the delivery has no X-Gitlab-Token: give the webhook a secret token")
    if not hmac.compare_digest(secret.encode(), given.encode()):
        raise Problem(
            401, f"X-Gitlab-Token is not the webhook's secret: GitLab's and ${name} differ"
        )
