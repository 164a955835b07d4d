"""Tenants' forge tokens in golem's store, on every store of the contract (in memory, a
SQLite file, a PostgreSQL database): sealed at rest with a key that is never in the
database, listed without their values, scoped to their tenant, and never lost to a wrong or
missing key."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select

from golem.core.errors import CredentialsKeyError, InvalidRequest, StoreError
from golem.store import (
    AppKey,
    MemoryStore,
    OAuthGrant,
    SqlStore,
    Store,
    TokenCipher,
    new_key,
)
from golem.store.schema import forge_credentials
from tests.store.conftest import Database

TOKEN_A = "ghp_tenantA_0123456789abcdefghijklmnop"  # noqa: S105 - test tokens
TOKEN_B = "ghp_tenantB_0123456789abcdefghijklmnop"  # noqa: S105
KEY_ENV = "GOLEM_TEST_STORE_CREDENTIALS_KEY"


@pytest.fixture
def cipher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TokenCipher:
    """A cipher whose key is the file credentials.key (its variable unset)."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    return TokenCipher(KEY_ENV, tmp_path / "keys" / "credentials.key")


async def raw_tokens(store: Store) -> dict[str, str]:
    """The sealed tokens as the store holds them, by tenant."""
    if isinstance(store, MemoryStore):
        return {tenant: sealed for (tenant, _), (sealed, _) in store._data.tokens.items()}
    assert isinstance(store, SqlStore)
    async with store.database.transaction() as db:
        rows = (await db.execute(select(forge_credentials))).all()
    return {str(row.tenant): str(row.token) for row in rows}


async def test_a_token_is_sealed_at_rest_and_listed_without_its_value(
    store: Store, cipher: TokenCipher
) -> None:
    tenant_a = store.for_tenant("a")
    kept = await tenant_a.credentials.put("github", TOKEN_A, cipher)
    assert (kept.tenant, kept.forge) == ("a", "github")
    [sealed] = (await raw_tokens(store)).values()
    assert TOKEN_A not in sealed
    assert "ghp_" not in sealed
    listed = await tenant_a.credentials.all()
    assert [c.model_dump(exclude={"created", "updated"}) for c in listed] == [
        {"tenant": "a", "forge": "github"}
    ]
    assert TOKEN_A not in repr(listed)
    assert await tenant_a.credentials.reveal("github", cipher) == TOKEN_A


async def test_the_key_file_is_made_private_once_and_a_readable_one_is_refused(
    store: Store, cipher: TokenCipher
) -> None:
    assert not cipher.has_key()
    await store.for_tenant("a").credentials.put("github", TOKEN_A, cipher)
    mode = stat.S_IMODE(cipher.key_file.stat().st_mode)
    assert mode == 0o600
    assert list(cipher.key_file.parent.iterdir()) == [cipher.key_file]  # no temporary left
    cipher.key_file.chmod(0o644)
    fresh = TokenCipher(KEY_ENV, cipher.key_file)
    with pytest.raises(CredentialsKeyError, match=r"may be read by others.*chmod 600"):
        await store.for_tenant("a").credentials.reveal("github", fresh)


async def test_a_replaced_token_keeps_its_creation_time_and_a_deleted_one_is_gone(
    store: Store, cipher: TokenCipher
) -> None:
    tenant_a = store.for_tenant("a")
    first = await tenant_a.credentials.put("github", TOKEN_A, cipher)
    second = await tenant_a.credentials.put("github", TOKEN_B, cipher)
    assert second.created == first.created
    assert second.updated >= first.updated
    assert len(await raw_tokens(store)) == 1
    assert await tenant_a.credentials.reveal("github", cipher) == TOKEN_B
    assert await tenant_a.credentials.delete("github") is True
    assert await tenant_a.credentials.delete("github") is False
    assert await tenant_a.credentials.reveal("github", cipher) is None
    assert await tenant_a.credentials.all() == []


async def test_a_tenant_sees_reveals_and_deletes_only_its_own_token(
    database: Database, store: Store, cipher: TokenCipher
) -> None:
    tenant_a, tenant_b = store.for_tenant("a"), store.for_tenant("b")
    await tenant_a.credentials.put("github", TOKEN_A, cipher)
    assert await tenant_b.credentials.all() == []
    assert await tenant_b.credentials.reveal("github", cipher) is None
    assert await tenant_b.credentials.delete("github") is False
    await tenant_b.credentials.put("github", TOKEN_B, cipher)
    assert await tenant_a.credentials.reveal("github", cipher) == TOKEN_A
    assert await tenant_b.credentials.reveal("github", cipher) == TOKEN_B
    everyone = await database.open(None)
    assert [c.tenant for c in await everyone.credentials.all()] == ["a", "b"]
    with pytest.raises(StoreError, match="for_tenant"):
        await everyone.credentials.reveal("github", cipher)
    with pytest.raises(StoreError, match="for_tenant"):
        await everyone.credentials.delete("github")
    with pytest.raises(StoreError, match="for_tenant"):
        await everyone.credentials.put("github", TOKEN_A, cipher)
    assert len(await raw_tokens(store)) == 2


async def test_a_wrong_key_is_a_clear_error_and_loses_nothing(
    store: Store, cipher: TokenCipher, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.for_tenant("a").credentials.put("github", TOKEN_A, cipher)
    before = await raw_tokens(store)
    monkeypatch.setenv(KEY_ENV, new_key())
    wrong = TokenCipher(KEY_ENV, cipher.key_file)
    with pytest.raises(CredentialsKeyError, match=f"stored with another key.*\\${KEY_ENV}"):
        await store.for_tenant("a").credentials.reveal("github", wrong)
    with pytest.raises(CredentialsKeyError, match="stored with another key"):
        await store.for_tenant("b").credentials.put("github", TOKEN_B, wrong)  # would mix keys
    assert (await raw_tokens(store)) == before
    monkeypatch.delenv(KEY_ENV)
    right = TokenCipher(KEY_ENV, cipher.key_file)
    assert await store.for_tenant("a").credentials.reveal("github", right) == TOKEN_A


async def test_a_missing_key_is_a_clear_error_and_no_new_key_replaces_it(
    store: Store, cipher: TokenCipher
) -> None:
    await store.for_tenant("a").credentials.put("github", TOKEN_A, cipher)
    saved = cipher.key_file.read_bytes()
    cipher.key_file.unlink()
    lost = TokenCipher(KEY_ENV, cipher.key_file)
    with pytest.raises(CredentialsKeyError, match=f"no key.*\\${KEY_ENV}"):
        await store.for_tenant("a").credentials.reveal("github", lost)
    with pytest.raises(CredentialsKeyError, match="no key"):
        await store.for_tenant("b").credentials.put("github", TOKEN_B, lost)
    assert not cipher.key_file.exists()  # no new key was made over the stored tokens
    fd = os.open(cipher.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as restored:
        restored.write(saved)
    back = TokenCipher(KEY_ENV, cipher.key_file)
    assert await store.for_tenant("a").credentials.reveal("github", back) == TOKEN_A


async def test_keys_rotate_through_the_variable_first_sealing_every_one_opening(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = new_key(), new_key()
    monkeypatch.setenv(KEY_ENV, old)
    await store.for_tenant("a").credentials.put(
        "github", TOKEN_A, TokenCipher(KEY_ENV, tmp_path / "k")
    )
    monkeypatch.setenv(KEY_ENV, f"{new}, {old}")
    both = TokenCipher(KEY_ENV, tmp_path / "k")
    assert await store.for_tenant("a").credentials.reveal("github", both) == TOKEN_A
    await store.for_tenant("b").credentials.put("github", TOKEN_B, both)
    token_b = (await raw_tokens(store))["b"]
    assert Fernet(new.encode()).decrypt(token_b.encode()).decode() == TOKEN_B
    assert not (tmp_path / "k").exists()  # a key from the variable makes no file


async def test_a_malformed_key_in_the_variable_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "not-a-key")
    with pytest.raises(CredentialsKeyError, match=f"\\${KEY_ENV} holds no valid key.*new-key"):
        TokenCipher(KEY_ENV, tmp_path / "k")


@pytest.mark.parametrize("token", ["", "ghp_with space", "ghp_line\nbreak", "x" * 2049, "é"])
async def test_a_token_that_cannot_be_one_is_refused_without_being_quoted(
    store: Store, cipher: TokenCipher, token: str
) -> None:
    with pytest.raises(InvalidRequest) as refused:
        await store.for_tenant("a").credentials.put("github", token, cipher)
    assert token not in refused.value.message or not token
    assert (await raw_tokens(store)) == {}


GRANT = OAuthGrant.model_validate(  # test tokens
    {
        "access_token": "oauth-access-0123456789", "refresh_token": "oauth-refresh-0123456789",
        "expires_at": 1_800_000_000.0, "client_id": "app", "client_secret": "gloas-0123456789",
    }
)  # fmt: skip
APP = AppKey(
    app_id=42, private_key="-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n"
)


async def test_an_app_key_and_an_oauth_grant_are_kept_sealed_and_come_back_whole(
    store: Store, cipher: TokenCipher
) -> None:
    tenant = store.for_tenant("a")
    await tenant.credentials.put("github", APP, cipher)
    await tenant.credentials.put("gitlab", GRANT, cipher)

    sealed = "".join((await raw_tokens(store)).values())
    assert await tenant.credentials.reveal("github", cipher) == APP
    assert await tenant.credentials.reveal("gitlab", cipher) == GRANT
    for secret in (APP.private_key, GRANT.access_token, GRANT.refresh_token, "gloas-"):
        assert secret not in sealed


async def test_of_two_refreshes_of_one_grant_only_the_first_is_kept(
    store: Store, cipher: TokenCipher
) -> None:
    tenant = store.for_tenant("a")
    await tenant.credentials.put("gitlab", GRANT, cipher)
    first = GRANT.model_copy(update={"access_token": "access-1", "refresh_token": "refresh-1"})
    second = GRANT.model_copy(update={"access_token": "access-2", "refresh_token": "refresh-2"})

    assert await tenant.credentials.replace_grant("gitlab", GRANT, first, cipher)
    assert not await tenant.credentials.replace_grant("gitlab", GRANT, second, cipher)  # lost

    assert await tenant.credentials.reveal("gitlab", cipher) == first
    assert not await store.for_tenant("b").credentials.replace_grant(
        "gitlab", GRANT, second, cipher
    )
