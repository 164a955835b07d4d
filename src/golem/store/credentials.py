"""Forge credentials in golem's store: one per tenant and forge, sealed at rest.

A credential is a plain token, a GitHub App's key or a GitLab OAuth grant (``ForgeSecret``;
the documents are sealed as JSON). It goes in and never comes back out, except to the
runner of that tenant's runs (``reveal``); listings show which forges have one
and when it was set. Before sealing, the store checks that the key opens the credentials
stored already, so that a wrong or missing key is an error instead of a database whose
credentials no key opens. A refreshed OAuth grant replaces the one it was refreshed from
only if that one is still stored (``replace_grant``): of two refreshes from one grant,
one is kept, and the other learns it lost.
"""

from __future__ import annotations

import time
from typing import Protocol

from sqlalchemy import delete, select, update

from golem.core.errors import StoreError
from golem.store.bounds import bounded
from golem.store.cipher import TokenCipher
from golem.store.records import (
    ForgeCredential,
    ForgeName,
    ForgeSecret,
    OAuthGrant,
    forge_secret,
    sealable,
)
from golem.store.repository import MemoryRepository, SqlRepository, upsert
from golem.store.schema import forge_credentials

__all__ = ["Credentials", "MemoryCredentials", "SqlCredentials"]


class Credentials(Protocol):
    """Tenants' forge credentials, sealed (``store.credentials``)."""

    async def put(
        self, forge: ForgeName, token: ForgeSecret, cipher: TokenCipher
    ) -> ForgeCredential:
        """Keep this tenant's credential for ``forge`` (a token, an App's key, an OAuth
        grant), sealed."""
        ...

    async def delete(self, forge: ForgeName) -> bool:
        """Forget this tenant's token for ``forge``."""
        ...

    async def all(self) -> list[ForgeCredential]:
        """Which forges have a token (never the tokens)."""
        ...

    async def reveal(self, forge: ForgeName, cipher: TokenCipher) -> ForgeSecret | None:
        """This tenant's credential for ``forge``, opened; for its runner only."""
        ...

    async def replace_grant(
        self, forge: ForgeName, old: OAuthGrant, new: OAuthGrant, cipher: TokenCipher
    ) -> bool:
        """Keep a refreshed OAuth grant in place of ``old``, if ``old`` is still the one
        kept (False: another refresh came first)."""
        ...


def _listed(row: object) -> ForgeCredential:
    return ForgeCredential.model_validate(row, from_attributes=True)


@bounded(retried={"all", "reveal"}, once={"put", "delete", "replace_grant"})
class SqlCredentials(SqlRepository):
    """Forge credentials in SQL."""

    async def put(
        self, forge: ForgeName, token: ForgeSecret, cipher: TokenCipher
    ) -> ForgeCredential:
        """Keep this tenant's credential for ``forge`` (replacing any), sealed by
        ``cipher``."""
        tenant = self._creating("a forge token")
        text = sealable(token)
        async with self.transaction() as db:
            stored = (await db.execute(select(forge_credentials).limit(1))).first()
        if stored is not None:  # the key must open what is there before it seals more
            cipher.open(stored.token, f"the stored {stored.forge} token of {stored.tenant!r}")
        sealed = cipher.seal(text)
        now = time.time()
        async with self.transaction(write=True) as db:
            statement = upsert(db, forge_credentials).values(
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

    async def delete(self, forge: ForgeName) -> bool:
        """Forget this tenant's token for ``forge``; False when it had none."""
        tenant = self._creating("or delete a forge token")
        async with self.transaction(write=True) as db:
            done = await db.execute(
                delete(forge_credentials).where(
                    forge_credentials.c.tenant == tenant, forge_credentials.c.forge == forge
                )
            )
        return bool(done.rowcount)

    async def all(self) -> list[ForgeCredential]:
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

    async def reveal(self, forge: ForgeName, cipher: TokenCipher) -> ForgeSecret | None:
        """This tenant's credential for ``forge``, opened (None: it has none). For the
        runner of this tenant's runs only: never answer it to a client, log it or put it in
        an event."""
        sealed = await _sealed(self, forge)
        if sealed is None:
            return None
        return forge_secret(cipher.open(sealed, f"the {forge} token of tenant {self.tenant!r}"))

    async def replace_grant(
        self, forge: ForgeName, old: OAuthGrant, new: OAuthGrant, cipher: TokenCipher
    ) -> bool:
        """Keep ``new`` in place of ``old`` (the grant it was refreshed from), if ``old`` is
        still this tenant's grant for ``forge``; False when another refresh (or a new
        grant) came first: then read the stored one."""
        sealed = await _sealed(self, forge)
        if sealed is None:
            return False
        stored = forge_secret(cipher.open(sealed, f"the {forge} token of tenant {self.tenant!r}"))
        if not isinstance(stored, OAuthGrant) or stored.refresh_token != old.refresh_token:
            return False
        table = forge_credentials
        async with self.transaction(write=True) as db:
            done = await db.execute(
                update(table)
                .where(table.c.tenant == self.tenant, table.c.forge == forge)
                .where(table.c.token == sealed)  # unchanged since it was read: else lost
                .values(token=cipher.seal(sealable(new)), updated=time.time())
            )
        return bool(done.rowcount)


async def _sealed(store: SqlRepository, forge: ForgeName) -> str | None:
    """The tenant's sealed credential for ``forge``, as stored."""
    if store.tenant is None:
        raise StoreError("a store for all tenants reveals no token: use store.for_tenant")
    async with store.transaction() as db:
        sealed = (
            await db.execute(
                select(forge_credentials.c.token).where(
                    forge_credentials.c.tenant == store.tenant,
                    forge_credentials.c.forge == forge,
                )
            )
        ).scalar_one_or_none()
    return None if sealed is None else str(sealed)


class MemoryCredentials(MemoryRepository):
    """Forge credentials in memory."""

    async def put(
        self, forge: ForgeName, token: ForgeSecret, cipher: TokenCipher
    ) -> ForgeCredential:
        """Keep this tenant's credential for ``forge``, sealed by ``cipher``."""
        tenant = self._creating("a forge token")
        text = sealable(token)
        for (owner, name), (sealed, _) in list(self._data.tokens.items())[:1]:
            cipher.open(sealed, f"the stored {name} token of {owner!r}")
        now = time.time()
        earlier = self._data.tokens.get((tenant, forge))
        created = earlier[1].created if earlier is not None else now
        listed = ForgeCredential(tenant=tenant, forge=forge, created=created, updated=now)
        self._data.tokens[(tenant, forge)] = (cipher.seal(text), listed)
        return listed

    async def delete(self, forge: ForgeName) -> bool:
        """Forget this tenant's token for ``forge``."""
        tenant = self._creating("or delete a forge token")
        return self._data.tokens.pop((tenant, forge), None) is not None

    async def all(self) -> list[ForgeCredential]:
        """Which forges this store's tenants have a token for."""
        return [
            listed for key, (_, listed) in sorted(self._data.tokens.items()) if self._mine(key[0])
        ]

    async def reveal(self, forge: ForgeName, cipher: TokenCipher) -> ForgeSecret | None:
        """This tenant's credential for ``forge``, opened."""
        if self.tenant is None:
            raise StoreError("a store for all tenants reveals no token: use store.for_tenant")
        kept = self._data.tokens.get((self.tenant, forge))
        if kept is None:
            return None
        return forge_secret(cipher.open(kept[0], f"the {forge} token of tenant {self.tenant!r}"))

    async def replace_grant(
        self, forge: ForgeName, old: OAuthGrant, new: OAuthGrant, cipher: TokenCipher
    ) -> bool:
        """Keep ``new`` in place of ``old``, if ``old`` is still the one kept."""
        stored = await self.reveal(forge, cipher)
        if not isinstance(stored, OAuthGrant) or stored.refresh_token != old.refresh_token:
            return False
        assert self.tenant is not None  # reveal refused a store of all tenants
        _, listed = self._data.tokens[(self.tenant, forge)]
        updated = listed.model_copy(update={"updated": time.time()})
        self._data.tokens[(self.tenant, forge)] = (cipher.seal(sealable(new)), updated)
        return True
