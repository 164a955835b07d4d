"""Backend options of the isolation tiers."""

from __future__ import annotations

RUNSC = {"runtime": "runsc"}
"""The docker backend's option running its boxes on gVisor."""
