"""A Slack mention made while its thread's run runs, as the store keeps it
(``store.pending``) and back: one per person and thread, its words masked with the secrets
the server knows, with the message's place and ids (so that Slack's retry of the same
event, before or after it started, starts nothing twice)."""

from __future__ import annotations

import json

from golem.core.masking import SecretMasker
from golem.service.slack.payloads import Mention
from golem.service.slack.reporter import SOURCE
from golem.store import PendingRecord

__all__ = ["asked_again", "kept"]

TEXT_MAX = 60000  # characters of a message kept (the record takes 65536)


def kept(asked: Mention, run_id: str, masker: SecretMasker) -> PendingRecord:
    """The pending request ``asked`` makes while ``run_id`` runs."""
    place = {
        "team": asked.team,
        "channel": asked.channel,
        "ts": asked.ts,
        "thread_ts": asked.thread_ts,
        "event_id": asked.event_id,
    }
    return PendingRecord(
        source=SOURCE,
        thread=asked.thread,
        person=asked.user,
        run_id=run_id,
        asked_by=asked.user,
        request=masker.mask_text(asked.text)[:TEXT_MAX],
        detail=json.dumps(place),
    )


def asked_again(request: PendingRecord) -> Mention:
    """The mention ``request`` was kept from (its words as kept: masked)."""
    place = json.loads(request.detail)
    return Mention(
        team=place["team"],
        channel=place["channel"],
        user=request.person,
        text=request.request,
        ts=place["ts"],
        thread_ts=place["thread_ts"],
        event_id=place["event_id"],
    )
