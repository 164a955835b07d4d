"""Automations over HTTP: list and show them (with their last and next run), make, change
and delete them (admins), fire one by hand, and each webhook automation's own endpoint,
which takes no API key: a signature with the automation's secret authenticates the
sender, and its Idempotency-Key makes each delivery start one run at most."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Header, Request, Response, status

from golem.core.ansi import clean_json
from golem.core.automation_config import AutomationConfig
from golem.core.errors import Problem
from golem.service.api.deps import Admin, Caller, State
from golem.service.api.runs import admit
from golem.service.automations import (
    Automation,
    AutomationView,
    FireAnswer,
    Firings,
    Scheduler,
    view_of,
)
from golem.service.automations.firing import common_fields, render_task, run_request
from golem.service.documents import Kept
from golem.service.keys import Principal
from golem.service.state import ServerState

__all__ = ["router", "signature"]

MAX_WEBHOOK_BODY = 1024 * 1024
PAYLOAD_SHOWN = 8000  # characters of a webhook's body its task's {payload} gets
IDEMPOTENCY_KEY = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


@asynccontextmanager
async def _scheduling(app: FastAPI) -> AsyncIterator[None]:
    state: ServerState = app.state.golem
    firings = Firings(state)
    scheduler = Scheduler(firings)
    app.state.automations = firings
    await scheduler.start_with(state.config.automations)
    try:
        yield
    finally:
        await scheduler.close()


router = APIRouter(prefix="/v1/automations", tags=["automations"], lifespan=_scheduling)


def signature(secret: str, body: bytes) -> str:
    """The ``X-Golem-Signature-256`` of ``body``: ``sha256=`` and the hex HMAC-SHA256 of
    the raw body keyed with the automation's secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _firings(request: Request) -> Firings:
    firings: Firings = request.app.state.automations
    return firings


async def _visible(state: ServerState, principal: Principal, name: str) -> Kept[Automation]:
    kept = await Firings(state).shelf.load(name)
    if kept is None or (principal.role != "admin" and kept.tenant != principal.tenant):
        raise Problem(404, f"no automation {name!r}; see GET /v1/automations")
    return kept


@router.get("")
async def list_automations(principal: Caller, state: State) -> list[AutomationView]:
    """This tenant's automations (an admin's: every tenant's), each with its last run and
    its next one."""
    every = await Firings(state).shelf.all()
    mine = [k for k in every if principal.role == "admin" or k.tenant == principal.tenant]
    return [await view_of(state.store, kept) for kept in mine]


@router.get("/{name}")
async def get_automation(name: str, principal: Caller, state: State) -> AutomationView:
    """One automation: its definition, the runs it started, what it skipped and why, and
    its next run."""
    return await view_of(state.store, await _visible(state, principal, name))


@router.put("/{name}", responses={409: {"description": "it is golem.toml's"}})
async def put_automation(
    name: str, definition: AutomationConfig, principal: Admin, state: State
) -> AutomationView:
    """Make or change an automation (admins); its runs are checked as an admin's run is.
    One of golem.toml's is changed there, not here (409)."""
    if definition.name != name:
        raise Problem(422, f"the body names automation {definition.name!r}, the path {name!r}")
    shelf = Firings(state).shelf
    kept = await shelf.load(name)
    if kept is not None and kept.model.origin == "config":
        raise Problem(409, f"automation {name!r} is golem.toml's: change it there")
    sample = {field: field for field in definition.fields()}
    fields = {**sample, **common_fields(name, definition.timezone, 0.0)}
    acting = Principal(tenant=definition.tenant, role="admin", key_id=principal.key_id)
    await admit(state, acting, run_request(state, definition, _SampleFields(fields)))
    if kept is not None and kept.tenant != definition.tenant:
        await shelf.delete(name)
        kept = None
    if kept is None:
        await shelf.for_tenant(definition.tenant).create(
            name, Automation(definition=definition, origin="api")
        )
    else:

        def changed(automation: Automation) -> Automation:
            automation.definition = definition
            return automation

        await shelf.change(name, changed)
    return await view_of(state.store, await _visible(state, principal, name))


@router.delete(
    "/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={409: {"description": "it is golem.toml's"}},
)
async def delete_automation(name: str, principal: Admin, state: State) -> None:
    """Forget an automation (admins); golem.toml's are removed there (409)."""
    kept = await _visible(state, principal, name)
    if kept.model.origin == "config":
        raise Problem(409, f"automation {name!r} is golem.toml's: remove it there")
    await Firings(state).shelf.delete(name)


@router.post("/{name}/run", status_code=status.HTTP_202_ACCEPTED)
async def run_automation(
    name: str,
    request: Request,
    response: Response,
    principal: Caller,
    state: State,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> FireAnswer:
    """Fire an automation by hand, as its schedule would (once per Idempotency-Key, when
    given); skipped while its last run is in progress."""
    kept = await _visible(state, principal, name)
    definition = kept.model.definition
    key = _idempotency_key(idempotency_key) if idempotency_key else f"manual-{uuid.uuid4().hex}"
    fields = common_fields(name, definition.timezone, time.time())
    if definition.event is not None or definition.webhook:
        raise Problem(
            409,
            f"automation {name!r} takes its fields from its "
            f"{'event' if definition.event else 'webhook'}: fire it that way",
        )
    return _answered(response, await _firings(request).fire(name, key, fields, "manual"))


@router.post(
    "/{name}/webhook",
    status_code=status.HTTP_202_ACCEPTED,
    responses={
        200: {"description": "a duplicate (its Idempotency-Key started a run already)"},
        401: {"description": "missing or wrong X-Golem-Signature-256"},
        503: {"description": "the automation's secret is not set: every delivery is refused"},
    },
)
async def automation_webhook(
    name: str,
    request: Request,
    response: Response,
    x_golem_signature_256: Annotated[str | None, Header()] = None,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> FireAnswer:
    """A delivery to a webhook automation: its JSON body (an object) gives the task's
    fields ({payload}, and each top-level value by its name). No API key: the body's
    HMAC-SHA256 with the automation's secret, in X-Golem-Signature-256, authenticates it;
    the same Idempotency-Key again starts nothing (200, naming the run)."""
    firings = _firings(request)
    kept = await firings.shelf.load(name)
    definition = kept.model.definition if kept is not None else None
    if definition is None or not definition.webhook:
        raise Problem(404, f"no webhook automation {name!r}")
    body = await _verified(request, definition, x_golem_signature_256)
    key = _idempotency_key(idempotency_key)
    fields = {**_fields(body), **common_fields(name, definition.timezone, time.time())}
    render_task(definition, fields)  # a field the task names and the body lacks: 422 now
    return _answered(response, await firings.fire(name, key, fields, "webhook"))


async def _verified(request: Request, definition: AutomationConfig, given: str | None) -> bytes:
    variable = definition.secret_env or ""
    secret = os.environ.get(variable) or None
    if secret is None:
        raise Problem(
            503,
            f"automation {definition.name!r} has no webhook secret, so it refuses every "
            f"delivery: set ${variable} and restart golem serve",
        )
    if not given:
        raise Problem(401, "the delivery has no X-Golem-Signature-256 (sha256=HMAC of the body)")
    body = await _capped(request)
    if not hmac.compare_digest(signature(secret, body).encode(), given.encode()):
        raise Problem(
            401, f"X-Golem-Signature-256 does not match the body: sign it with ${variable}"
        )
    return body


async def _capped(request: Request) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_WEBHOOK_BODY:
            raise Problem(413, f"an automation's delivery is at most {MAX_WEBHOOK_BODY} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _fields(body: bytes) -> dict[str, str]:
    """The task's fields of a delivery: {payload} (its JSON, cleaned, cut to
    PAYLOAD_SHOWN characters) and each top-level scalar by its name."""
    try:
        payload = json.loads(body) if body.strip() else {}
    except ValueError as exc:
        raise Problem(400, f"the delivery is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise Problem(400, "the delivery is not a JSON object")
    cleaned: Mapping[str, Any] = clean_json(payload)
    fields = {
        key: str(value)
        for key, value in cleaned.items()
        if FIELD.match(key) and isinstance(value, (str, int, float, bool))
    }
    fields["payload"] = json.dumps(cleaned, ensure_ascii=False)[:PAYLOAD_SHOWN]
    return fields


def _idempotency_key(given: str | None) -> str:
    if not given or not IDEMPOTENCY_KEY.match(given):
        raise Problem(400, "a delivery needs an Idempotency-Key: 1-64 of A-Z a-z 0-9 . _ : -")
    return given


def _answered(response: Response, answer: FireAnswer) -> FireAnswer:
    response.status_code = (
        status.HTTP_200_OK if answer.status == "duplicate" else status.HTTP_202_ACCEPTED
    )
    return answer


class _SampleFields(dict[str, str]):
    """Fields for checking an automation's run before it fires: any name is its own."""

    def __missing__(self, key: str) -> str:
        return key
