"""Forge credentials in golem's store: one token per tenant and forge, sealed at rest.

A token goes in and never comes back out, except to the runner of that tenant's runs
(``reveal_forge_token``); listings show which forges have one and when it was set. Before
sealing, the store checks that the key opens the tokens stored already, so that a wrong or
missing key is an error instead of a database whose tokens no key opens.
"""

from __future__ import annotations

import re
import time
from contextlib import AbstractContextManager
from typing import Literal, Protocol

from pydantic import BaseModel
from sqlalchemy import ColumnElement, Table, delete, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection

from golem.core.errors import InvalidRequest, StoreError
from golem.service.store.cipher import TokenCipher
from golem.service.store.schema import forge_credentials

__all__ = ["TOKEN_PATTERN", "CredentialRecords", "ForgeCredential", "ForgeName", "check_token"]

ForgeName = Literal["github"]
TOKEN_PATTERN = re.compile(r"^[\x21-\x7e]{1,2048}$")
"""A token: 1-2048 visible ASCII characters (it travels in HTTP headers)."""


class ForgeCredential(BaseModel):
    """A tenant's token for one forge, as listed: which forge, when set; never the token."""

    tenant: str
    forge: ForgeName
    created: float
    updated: float


def check_token(token: str) -> str:
    """``token``, if it can be one; else InvalidRequest (which never quotes it)."""
    if not TOKEN_PATTERN.match(token):
        raise InvalidRequest(
            "a forge token is 1-2048 visible ASCII characters, without spaces or line "
            "breaks: check what was pasted (the token is not shown here)"
        )
    return token


class _Store(Protocol):
    tenant: str | None

    def transaction(self, *, write: bool = False) -> AbstractContextManager[Connection]: ...
    def _mine(self, table: Table) -> ColumnElement[bool]: ...
    def _creating(self, what: str) -> str: ...


def _listed(row: object) -> ForgeCredential:
    return ForgeCredential.model_validate(row, from_attributes=True)


class CredentialRecords:
    """The forge-credentials half of SqlStore."""

    def set_forge_token(
        self: _Store, forge: ForgeName, token: str, cipher: TokenCipher
    ) -> ForgeCredential:
        """Keep this tenant's token for ``forge`` (replacing any), sealed by ``cipher``."""
        tenant = self._creating("a forge token")
        check_token(token)
        with self.transaction() as db:
            stored = db.execute(select(forge_credentials).limit(1)).first()
        if stored is not None:  # the key must open what is there before it seals more
            cipher.open(stored.token, f"the stored {stored.forge} token of {stored.tenant!r}")
        sealed = cipher.seal(token)
        now = time.time()
        with self.transaction(write=True) as db:
            insert = postgresql_insert if db.dialect.name == "postgresql" else sqlite_insert
            statement = insert(forge_credentials).values(
                tenant=tenant, forge=forge, token=sealed, created=now, updated=now
            )
            db.execute(
                statement.on_conflict_do_update(
                    index_elements=["tenant", "forge"],
                    set_={"token": sealed, "updated": now},
                )
            )
            row = db.execute(
                select(forge_credentials).where(
                    forge_credentials.c.tenant == tenant, forge_credentials.c.forge == forge
                )
            ).one()
        return _listed(row)

    def delete_forge_token(self: _Store, forge: ForgeName) -> bool:
        """Forget this tenant's token for ``forge``; False when it had none."""
        tenant = self._creating("or delete a forge token")
        with self.transaction(write=True) as db:
            done = db.execute(
                delete(forge_credentials).where(
                    forge_credentials.c.tenant == tenant, forge_credentials.c.forge == forge
                )
            )
        return bool(done.rowcount)

    def list_forge_credentials(self: _Store) -> list[ForgeCredential]:
        """Which forges this store's tenants have a token for (never the tokens)."""
        columns = [forge_credentials.c[name] for name in ForgeCredential.model_fields]
        with self.transaction() as db:
            rows = db.execute(
                select(*columns)
                .where(self._mine(forge_credentials))
                .order_by(forge_credentials.c.tenant, forge_credentials.c.forge)
            ).all()
        return [_listed(row) for row in rows]

    def reveal_forge_token(self: _Store, forge: ForgeName, cipher: TokenCipher) -> str | None:
        """This tenant's token for ``forge``, opened (None: it has none). For the runner of
        this tenant's runs only: never answer it to a client, log it or put it in an event."""
        if self.tenant is None:
            raise StoreError("a store for all tenants reveals no token: use store.for_tenant")
        with self.transaction() as db:
            sealed = db.execute(
                select(forge_credentials.c.token).where(
                    forge_credentials.c.tenant == self.tenant, forge_credentials.c.forge == forge
                )
            ).scalar_one_or_none()
        if sealed is None:
            return None
        return cipher.open(str(sealed), f"the {forge} token of tenant {self.tenant!r}")
