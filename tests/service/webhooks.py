"""Forge webhook deliveries as GitHub and GitLab send them, to a served golem: for the
trigger, automation and prepared-repository tests."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from typing import Any

import httpx

from tests.service.served import Served

__all__ = ["deliver_github"]


def deliver_github(
    served: Served,
    event: str,
    payload: dict[str, Any],
    *,
    secret: str,
    delivery: str | None = None,
    signature: str | None = None,
) -> httpx.Response:
    """POST a delivery as GitHub does: JSON, signed with ``secret`` (HMAC-SHA256), or with
    ``signature`` as given ("": none)."""
    body = json.dumps(payload).encode()
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": f"sha256={digest}" if signature is None else signature,
    }
    if not headers["X-Hub-Signature-256"]:
        del headers["X-Hub-Signature-256"]
    with served.client() as client:
        return client.post("/v1/github/webhook", content=body, headers=headers)
