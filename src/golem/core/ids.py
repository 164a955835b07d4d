"""Identifiers: short, sortable-enough, safe in file names, labels and URLs."""

from __future__ import annotations

import secrets

__all__ = ["new_id"]


def new_id(prefix: str) -> str:
    """Return ``prefix-`` followed by 12 random hex digits, e.g. ``box-3f9a0c12d4e1``."""
    return f"{prefix}-{secrets.token_hex(6)}"
