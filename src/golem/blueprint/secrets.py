"""The secrets a run holds, and the one masker its outputs pass through.

A run knows secrets a box must never hand out: the values its box gets as secrets
(``box.secrets_env``), the real values of brokered credentials (``[[credentials]]``) and
its forge tokens, including those minted after it started (``learn``). Whatever leaves
the run (events, its saved state, the commit message, the pull request and comments) goes
through ``RunSecrets.mask`` first, so a secret a box printed, an agent repeated or an
error carried is ``***`` wherever it is shown or kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from pydantic import BaseModel

from golem.core.errors import ConfigError
from golem.core.masking import SecretMasker, basic_auth, mask_fields
from golem.core.network import Credential
from golem.sandbox.egress import read_credential_values

__all__ = ["RunSecrets"]

ModelT = TypeVar("ModelT", bound=BaseModel)


class RunSecrets:
    """Masks a run's secrets in text, in events and in its state."""

    def __init__(self, values: Sequence[str]) -> None:
        self.values = sorted({value for value in values if value})
        self._masker = SecretMasker(self.values)

    def learn(self, value: str) -> None:
        """Mask ``value`` too from now on (a forge token minted mid-run)."""
        if value and value not in self.values:
            self.values = sorted({*self.values, value})
            self._masker = SecretMasker(self.values)

    def current(self) -> list[str]:
        """Every secret known now (for a log filter that outlives ``learn``)."""
        return self.values

    @classmethod
    def gather(
        cls, box_secrets: Sequence[str], credentials: Sequence[Credential], tokens: Sequence[str]
    ) -> RunSecrets:
        """The box's secret values, the brokered credentials' real values (those the host
        can read) and the forge tokens."""
        brokered: list[str] = []
        for credential in credentials:
            try:
                [value] = read_credential_values([credential]).values()
            except ConfigError:
                continue  # a credential the host cannot read is in no output either
            brokered.append(value)
            if credential.auth == "basic":  # the form golem sends it in
                brokered.append(basic_auth(credential.username, value))
        return cls([*box_secrets, *brokered, *tokens])

    def mask(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        return self._masker.mask_text(text) if self.values else text

    def mask_model(self, model: ModelT) -> ModelT:
        """``model`` with every string in it masked (the same object when none held a
        secret)."""
        return mask_fields(model, self.mask) if self.values else model
