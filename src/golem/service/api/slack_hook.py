"""Slack's requests to golem's app (see docs/slack.md): the Events API (a mention, a message
in a thread), the slash command ``/golem``, and interactivity (a status message's
buttons). No API key: a request is read only once its ``X-Slack-Signature`` (HMAC-SHA256
of ``v0:TIMESTAMP:BODY`` with the app's signing secret, checked by the official SDK's
``SignatureVerifier``) matches and its ``X-Slack-Request-Timestamp`` is within five
minutes of now, so an old request replayed is refused; without the signing secret, every
request is. Bodies are bounded as any delivery's, JSON nesting too (the interactivity
payload measured before it is parsed), and every string cleaned before it is read."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any
from urllib.parse import parse_qs

from fastapi import APIRouter, FastAPI, Header, Request
from pydantic import BaseModel
from slack_sdk.signature import SignatureVerifier

from golem.core.ansi import clean_json
from golem.core.errors import Problem
from golem.service.api.webhooks import read_body
from golem.service.json_depth import JsonDepth, depth_refusal
from golem.service.slack import SlackAnswer, SlackTrigger
from golem.service.slack.payloads import (
    Ignored,
    Mention,
    read_actions,
    read_command,
    read_event,
)

__all__ = ["REPLAY_WINDOW", "router"]

log = logging.getLogger("golem.service.slack")
REPLAY_WINDOW = 300
"""Seconds a signed request is good for (Slack's advice, and its SDK's check)."""
TIMESTAMP = re.compile(r"[0-9]{1,12}")


@asynccontextmanager
async def _living(app: FastAPI) -> AsyncIterator[None]:
    trigger = SlackTrigger(app.state.golem)
    app.state.slack = trigger
    trigger.follow_previous()
    try:
        yield
    finally:
        await trigger.close()


router = APIRouter(prefix="/v1/slack", tags=["slack"], lifespan=_living)
SIGNED: dict[int | str, dict[str, Any]] = {
    401: {"description": "a missing or wrong X-Slack-Signature, or a timestamp too old"},
    503: {"description": "no signing secret (or bot token) is configured: all are refused"},
}


class Challenge(BaseModel):
    """The answer to Slack's ``url_verification``: its challenge, given back."""

    challenge: str


class CommandAnswer(BaseModel):
    """What the person who typed the command sees (only they do)."""

    response_type: str = "ephemeral"
    text: str


@router.post("/events", responses=SIGNED)
async def slack_events(
    request: Request,
    x_slack_request_timestamp: Annotated[str | None, Header()] = None,
    x_slack_signature: Annotated[str | None, Header()] = None,
    x_slack_retry_num: Annotated[str | None, Header()] = None,
) -> SlackAnswer | Challenge:
    """An Events API request: ``url_verification`` (answered with its challenge), or an
    ``event_callback`` whose ``app_mention`` (or ``message`` in a thread mentioning golem)
    starts a run or a follow-up. Slack's retries of one event (``X-Slack-Retry-Num``), and
    the two events of one message, start it once."""
    trigger: SlackTrigger = request.app.state.slack
    body = await _verified(request, trigger, x_slack_request_timestamp, x_slack_signature)
    payload = _json(body)
    web = trigger.web
    if payload.get("type") == "url_verification":
        return Challenge(challenge=str(payload.get("challenge") or "")[:200])
    if web is None:
        raise _no_token(trigger)
    event = read_event(payload, await web.bot_user())
    if isinstance(event, Mention) and _foreign(trigger, event.team):
        event = Ignored(f"workspace {event.team} is not golem's ([server.slack] team)")
    if isinstance(event, Ignored):
        answer = SlackAnswer(status="ignored", reason=event.reason)
    elif isinstance(event, Mention):
        answer = await trigger.mention(event)
    else:
        answer = SlackAnswer(status="ignored", reason="nothing to do")
    retry = f" (retry {x_slack_retry_num[:4]})" if x_slack_retry_num else ""
    log.info("Slack event%s: %s, %s", retry, answer.status, answer.reason)
    return answer


@router.post("/commands", responses=SIGNED)
async def slack_command(
    request: Request,
    x_slack_request_timestamp: Annotated[str | None, Header()] = None,
    x_slack_signature: Annotated[str | None, Header()] = None,
) -> CommandAnswer:
    """The slash command ``/golem TEXT``: a run for TEXT, reported in a thread golem starts
    in the channel; the answer is shown to the person alone."""
    trigger: SlackTrigger = request.app.state.slack
    body = await _verified(request, trigger, x_slack_request_timestamp, x_slack_signature)
    if trigger.web is None:
        raise _no_token(trigger)
    command = read_command(_form(body), "/golem")
    if not isinstance(command, Ignored) and _foreign(trigger, command.team):
        command = Ignored(f"workspace {command.team} is not golem's")
    if isinstance(command, Ignored):
        return CommandAnswer(text=f"golem did nothing: {command.reason}")
    return CommandAnswer(text=await trigger.command(command))


@router.post("/interactivity", responses=SIGNED)
async def slack_interactivity(
    request: Request,
    x_slack_request_timestamp: Annotated[str | None, Header()] = None,
    x_slack_signature: Annotated[str | None, Header()] = None,
) -> SlackAnswer:
    """A click on a button of a run's status message (``block_actions``): approve or
    reject the gate the run waits at, or cancel the run."""
    trigger: SlackTrigger = request.app.state.slack
    body = await _verified(request, trigger, x_slack_request_timestamp, x_slack_signature)
    if trigger.web is None:
        raise _no_token(trigger)
    raw = _form(body).get("payload", "")
    depth = JsonDepth(trigger.state.config.server.max_json_depth)
    if not depth.feed(raw.encode()):
        raise Problem(400, f"the interaction's payload: {depth_refusal(depth.limit)}")
    actions = read_actions(_json(raw.encode()))
    if not isinstance(actions, Ignored) and _foreign(trigger, actions[0].team):
        actions = Ignored(f"workspace {actions[0].team} is not golem's ([server.slack] team)")
    if isinstance(actions, Ignored):
        return SlackAnswer(status="ignored", reason=actions.reason)
    answers = [await trigger.act(action) for action in actions]
    return answers[-1]


async def _verified(
    request: Request, trigger: SlackTrigger, timestamp: str | None, signature: str | None
) -> bytes:
    """The raw body, once its signature proves Slack sent it within the replay window."""
    secret = trigger.signing_secret()
    name = trigger.config.signing_secret_env
    if secret is None:
        raise Problem(
            503,
            f"golem's Slack app has no signing secret, so it refuses every request: set ${name} "
            "([server.slack] signing_secret_env) to the app's signing secret and restart "
            "golem serve",
        )
    if not timestamp or not TIMESTAMP.fullmatch(timestamp) or not signature:
        raise Problem(401, "the request has no X-Slack-Request-Timestamp and X-Slack-Signature")
    if abs(time.time() - int(timestamp)) > REPLAY_WINDOW:
        raise Problem(
            401,
            f"the request was signed more than {REPLAY_WINDOW // 60} minutes ago (or this "
            "host's clock is off): an old request is refused, never replayed",
        )
    body = await read_body(request)
    if not SignatureVerifier(secret).is_valid(body, timestamp, signature):
        raise Problem(
            401,
            f"X-Slack-Signature does not match the body: the app's signing secret on Slack and "
            f"${name} differ",
        )
    return body


def _json(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise Problem(400, f"the request is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise Problem(400, "the request is not a JSON object")
    return clean_json(payload)


def _form(body: bytes) -> dict[str, str]:
    """A form body's fields (each field's first value), cleaned."""
    try:
        fields = parse_qs(body.decode(), keep_blank_values=True, max_num_fields=100)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Problem(400, f"the request is not a form: {exc}") from exc
    return clean_json({name: values[0] for name, values in fields.items() if values})


def _foreign(trigger: SlackTrigger, team: str) -> bool:
    """Whether a request comes from another workspace than ``[server.slack] team``."""
    return trigger.config.team is not None and team != trigger.config.team


def _no_token(trigger: SlackTrigger) -> Problem:
    return Problem(
        503,
        f"golem's Slack app has no bot token: set ${trigger.config.token_env} ([server.slack] "
        "token_env) and restart golem serve",
    )
