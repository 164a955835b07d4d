"""Linear's webhook deliveries as Linear sends them, to a served golem: its documented
payloads (tests/service/payloads/linear), signed (fixtures of the Linear trigger's tests)."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from golem.testing.linear_server import LinearServer
from tests.service.served import Served

TOKEN = "lin_api_triggertest0123456789abcdef"  # noqa: S105 - a test token
SECRET = "linear-signing-secret-0123456789"  # noqa: S105 - a test secret
PAYLOADS = Path(__file__).parent / "payloads" / "linear"
ENV = {"LINEAR_TEST_TOKEN": TOKEN, "LINEAR_TEST_SECRET": SECRET}


def payload(name: str) -> dict[str, Any]:
    """Linear's documented payload ``name`` (a fresh copy)."""
    loaded: dict[str, Any] = json.loads((PAYLOADS / f"{name}.json").read_text())
    return copy.deepcopy(loaded)


def deliver(
    served: Served,
    body: dict[str, Any],
    *,
    secret: str = SECRET,
    delivery: str | None = None,
    sent: float | None = None,
    signature: str | None = None,
) -> httpx.Response:
    """POST a delivery as Linear does: JSON, its webhookTimestamp (ms), signed."""
    body = {**body, "webhookTimestamp": int((time.time() if sent is None else sent) * 1000)}
    raw = json.dumps(body).encode()
    headers = {
        "Content-Type": "application/json; charset=utf-8",
        "Linear-Delivery": delivery or str(uuid.uuid4()),
        "Linear-Event": str(body.get("type")),
        "User-Agent": "Linear-Webhook",
    }
    signed = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    headers["Linear-Signature"] = signed if signature is None else signature
    if not headers["Linear-Signature"]:
        del headers["Linear-Signature"]
    with served.client() as client:
        return client.post("/v1/linear/webhook", content=raw, headers=headers)


def assigned(linear: LinearServer, issue: dict[str, Any], actor: str) -> dict[str, Any]:
    """An Issue update: ``actor`` assigned the issue to golem's user."""
    body = payload("issue_update")
    body["actor"]["id"] = actor
    body["data"].update(id=issue["id"], assigneeId=linear.viewer["id"],
                        teamId=issue["team"]["id"], identifier=issue["identifier"])  # fmt: skip
    body["data"]["team"] = issue["team"]
    return body
