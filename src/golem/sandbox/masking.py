"""Secret masking for byte streams: ``golem.core.masking``'s one masker, under the name the
sandbox layer has always used."""

from __future__ import annotations

from golem.core.masking import MASK, SecretMasker

__all__ = ["MASK", "SecretMasker"]
