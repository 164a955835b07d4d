"""Forge credentials in golem's store: one token per tenant and forge, sealed at rest.

A token goes in and never comes back out, except to the runner of that tenant's runs
(``reveal_forge_token``); listings show which forges have one and when it was set. Before
sealing, the store checks that the key opens the tokens stored already, so that a wrong or
missing key is an error instead of a database whose tokens no key opens.
"""

from __future__ import annotations

import time

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from golem.core.errors import StoreError
from golem.store.cipher import TokenCipher
from golem.store.plumbing import SqlBase
from golem.store.records import ForgeCredential, ForgeName, check_token
from golem.store.schema import forge_credentials

__all__ = ["SqlCredentials"]


def _listed(row: object) -> ForgeCredential:
    return ForgeCredential.model_validate(row, from_attributes=True)


class SqlCredentials:
    """The forge-credentials part of SqlStore."""

    async def set_forge_token(
        self: SqlBase, forge: ForgeName, token: str, cipher: TokenCipher
    ) -> ForgeCredential:
        """Keep this tenant's token for ``forge`` (replacing any), sealed by ``cipher``."""
        tenant = self._creating("a forge token")
        check_token(token)
        async with self.transaction() as db:
            stored = (await db.execute(select(forge_credentials).limit(1))).first()
        if stored is not None:  # the key must open what is there before it seals more
            cipher.open(stored.token, f"the stored {stored.forge} token of {stored.tenant!r}")
        sealed = cipher.seal(token)
        now = time.time()
        async with self.transaction(write=True) as db:
            insert = postgresql_insert if db.dialect.name == "postgresql" else sqlite_insert
            statement = insert(forge_credentials).values(
                tenant=tenant, forge=forge, token=sealed, created=now, updated=now
            )
            await db.execute(
                statement.on_conflict_do_update(
                    index_elements=["tenant", "forge"],
                    set_={"token": sealed, "updated": now},
                )
            )
            row = (
                await db.execute(
                    select(forge_credentials).where(
                        forge_credentials.c.tenant == tenant, forge_credentials.c.forge == forge
                    )
                )
            ).one()
        return _listed(row)

    async def delete_forge_token(self: SqlBase, forge: ForgeName) -> bool:
        """Forget this tenant's token for ``forge``; False when it had none."""
        tenant = self._creating("or delete a forge token")
        async with self.transaction(write=True) as db:
            done = await db.execute(
                delete(forge_credentials).where(
                    forge_credentials.c.tenant == tenant, forge_credentials.c.forge == forge
                )
            )
        return bool(done.rowcount)

    async def list_forge_credentials(self: SqlBase) -> list[ForgeCredential]:
        """Which forges this store's tenants have a token for (never the tokens)."""
        columns = [forge_credentials.c[name] for name in ForgeCredential.model_fields]
        async with self.transaction() as db:
            rows = (
                await db.execute(
                    select(*columns)
                    .where(self._mine(forge_credentials))
                    .order_by(forge_credentials.c.tenant, forge_credentials.c.forge)
                )
            ).all()
        return [_listed(row) for row in rows]

    async def reveal_forge_token(
        self: SqlBase, forge: ForgeName, cipher: TokenCipher
    ) -> str | None:
        """This tenant's token for ``forge``, opened (None: it has none). For the runner of
        this tenant's runs only: never answer it to a client, log it or put it in an event."""
        if self.tenant is None:
            raise StoreError("a store for all tenants reveals no token: use store.for_tenant")
        async with self.transaction() as db:
            sealed = (
                await db.execute(
                    select(forge_credentials.c.token).where(
                        forge_credentials.c.tenant == self.tenant,
                        forge_credentials.c.forge == forge,
                    )
                )
            ).scalar_one_or_none()
        if sealed is None:
            return None
        return cipher.open(str(sealed), f"the {forge} token of tenant {self.tenant!r}")
