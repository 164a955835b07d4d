"""What every forge's webhook endpoint shares: the trigger made with the server, the capped
body, the JSON payload, and the answer's status code."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Literal

from fastapi import FastAPI, Request, Response, status

from golem.core.ansi import clean_json
from golem.core.errors import Problem
from golem.service.forge_names import Rule, check_delivery
from golem.service.trigger import Trigger, TriggerAnswer

__all__ = ["MAX_BODY", "answered", "lifespan", "read_body", "read_payload"]

MAX_BODY = 25 * 1024 * 1024  # GitHub caps a delivery's payload at 25 MB (GitLab: 25 MB too)


def lifespan(
    provider: Literal["github", "gitlab"],
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The lifespan of ``provider``'s trigger: as long as the server (after its state,
    which the app's own lifespan makes); it goes on watching the runs a previous server
    left unreported. It lives on ``app.state.<provider>_trigger``."""

    @asynccontextmanager
    async def living(app: FastAPI) -> AsyncIterator[None]:
        state = app.state.golem
        trigger = Trigger(state, provider, getattr(state.config.server, provider))
        setattr(app.state, f"{provider}_trigger", trigger)
        trigger.follow_previous()
        try:
            yield
        finally:
            await trigger.close()

    return living


async def read_body(request: Request) -> bytes:
    """The raw body, refused (413) past MAX_BODY."""
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


def read_payload(body: bytes, content_type: str, names: Mapping[str, Rule]) -> Mapping[str, Any]:
    """The delivery's JSON object (400 when it is not one, 415 when form-encoded), its
    ``names`` (the fields bound for forge URL paths) checked as they came (422: a control
    character in a name is refused, never cleaned into another name), then every string
    in it cleaned (``golem.core.ansi``): what a forge delivers enters golem here."""
    if "x-www-form-urlencoded" in content_type:
        raise Problem(415, "set the webhook's content type to application/json")
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise Problem(400, f"the delivery is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise Problem(400, "the delivery is not a JSON object")
    check_delivery(names, payload)
    return clean_json(payload)


def answered(response: Response, answer: TriggerAnswer) -> TriggerAnswer:
    """``answer``, with its status code: 202 for what was started or ignored, else 200."""
    response.status_code = (
        status.HTTP_202_ACCEPTED
        if answer.status in ("ignored", "started", "queued")
        else status.HTTP_200_OK
    )
    return answer
