"""GitHub's webhook: a signed delivery in, a run for an issue out (see
docs/github-trigger.md). Only deliveries signed with the secret in the variable
``[server.github] secret_env`` names are read; without that secret, none is."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Header, Request, Response, status

from golem.core.errors import Problem
from golem.service.trigger import GitHubTrigger, Ignored, TriggerAnswer, read_delivery

__all__ = ["router", "signature"]

log = logging.getLogger("golem.service.trigger")
MAX_BODY = 25 * 1024 * 1024  # GitHub caps a delivery's payload at 25 MB
DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,100}$")


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The trigger lives as long as the server (after its state, which the app's own
    lifespan makes); it goes on watching the runs a previous server left unreported."""
    trigger = GitHubTrigger(app.state.golem)
    app.state.github_trigger = trigger
    trigger.follow_previous()
    try:
        yield
    finally:
        await trigger.close()


router = APIRouter(prefix="/v1/github", tags=["github"], lifespan=_lifespan)


def signature(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` GitHub sends with ``body``: ``sha256=`` and the hex
    HMAC-SHA256 of the raw body keyed with the webhook's secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@router.post(
    "/webhook",
    status_code=status.HTTP_202_ACCEPTED,
    responses={
        200: {"description": "ping, or the run a delivery asked for exists already"},
        401: {"description": "missing or wrong X-Hub-Signature-256"},
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
    run for that issue. Anything else is answered, and ignored with a reason. No API key:
    the signature of the body with the webhook's secret authenticates GitHub."""
    trigger: GitHubTrigger = request.app.state.github_trigger
    body = await _verified_body(request, trigger, x_hub_signature_256)
    if not x_github_event or not x_github_delivery or not DELIVERY_ID.match(x_github_delivery):
        raise Problem(400, "a delivery needs X-GitHub-Event and X-GitHub-Delivery headers")
    payload = _payload(body, request.headers.get("content-type", ""))
    answer = await _answer(trigger, x_github_event, x_github_delivery, payload)
    response.status_code = (
        status.HTTP_202_ACCEPTED if answer.status in ("ignored", "started") else status.HTTP_200_OK
    )
    log.info(
        "GitHub delivery %s (%s): %s, %s",
        x_github_delivery, x_github_event, answer.status, answer.reason,
    )  # fmt: skip
    return answer


async def _answer(
    trigger: GitHubTrigger, event: str, delivery: str, payload: Mapping[str, Any]
) -> TriggerAnswer:
    if event == "ping":
        return TriggerAnswer(status="ok", reason="pong: golem receives this webhook's deliveries")
    own = await trigger.own_login() if event == "issue_comment" else None
    call = read_delivery(event, payload, trigger.config, own)
    if isinstance(call, Ignored):
        return TriggerAnswer(status="ignored", reason=call.reason)
    return await trigger.start(call, delivery)


async def _verified_body(request: Request, trigger: GitHubTrigger, given: str | None) -> bytes:
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
    body = await _body(request)
    if not hmac.compare_digest(signature(secret, body).encode(), given.encode()):
        raise Problem(
            401,
            "X-Hub-Signature-256 does not match the body: the webhook's secret on GitHub and "
            f"${name} differ",
        )
    return body


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise Problem(413, f"a delivery is at most {MAX_BODY} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise Problem(413, f"a delivery is at most {MAX_BODY} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _payload(body: bytes, content_type: str) -> Mapping[str, Any]:
    if "x-www-form-urlencoded" in content_type:
        raise Problem(415, "set the webhook's content type to application/json")
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise Problem(400, f"the delivery is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise Problem(400, "the delivery is not a JSON object")
    return payload
