"""Cron schedules in a time zone (cronsim: day-of-month and day-of-week as cron means
them, daylight saving time as the zone has it): the latest slot at or before a moment, the
next one after it, and how many passed between two moments."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronsim import CronSim

from golem.core.automation_config import zone

__all__ = ["latest_slot", "next_slot", "slot_key", "slots_between"]

COUNTED = 1000  # missed slots counted at most


def latest_slot(cron: str, timezone: str, now: float) -> float:
    """The latest slot at or before ``now`` (cron slots fall on whole minutes)."""
    moment = datetime.fromtimestamp(now, zone(timezone)) + timedelta(seconds=1)
    return next(CronSim(cron, moment, reverse=True)).timestamp()


def next_slot(cron: str, timezone: str, after: float) -> float:
    """The first slot after ``after``."""
    return next(CronSim(cron, datetime.fromtimestamp(after, zone(timezone)))).timestamp()


def slots_between(cron: str, timezone: str, start: float, end: float) -> int:
    """How many slots lie after ``start`` and before ``end`` (at most COUNTED)."""
    count = 0
    for slot in CronSim(cron, datetime.fromtimestamp(start, zone(timezone))):
        if slot.timestamp() >= end or count >= COUNTED:
            break
        count += 1
    return count


def slot_key(slot: float) -> str:
    """A slot's once-only key: its time in UTC, to the minute."""
    return datetime.fromtimestamp(slot, UTC).strftime("%Y-%m-%dT%H:%MZ")
