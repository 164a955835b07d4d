"""The key that seals tenants' forge tokens in the store, and sealing with it.

Tokens are sealed with Fernet (AES-128-CBC and HMAC-SHA256, from ``cryptography``). The key
is never in the database: it comes from the variable ``[server] credentials_key_env``
names, else from the key file ``credentials.key`` in the state directory, which is made
(mode 0600, atomically, so that two processes agree on one key) the first time a token is
sealed. A key file that others could read is refused. The variable may hold several keys,
comma-separated: the first seals, each of them opens (to rotate keys). ``cryptography`` is
imported when a key is first used: reading runs (`golem runs ls`) never pays for it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from golem.core.config import GolemConfig
from golem.core.errors import CredentialsKeyError

if TYPE_CHECKING:
    from cryptography.fernet import MultiFernet

__all__ = ["KEY_FILE", "TokenCipher", "new_key"]

KEY_FILE = "credentials.key"
MAX_KEY_FILE = 64 * 1024


def new_key() -> str:
    """A fresh key (for ``credentials_key_env``)."""
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


class TokenCipher:
    """Seals tokens for the store and opens them again, with the configured key."""

    def __init__(self, key_env: str, key_file: Path) -> None:
        self.key_env = key_env
        self.key_file = key_file
        self._keys: MultiFernet | None = None
        if os.environ.get(key_env):
            self._keys = self._parse(os.environ[key_env], f"${key_env}")

    @classmethod
    def from_config(cls, config: GolemConfig) -> TokenCipher:
        """The cipher of ``[server] credentials_key_env``, or of the state directory's file."""
        return cls(config.server.credentials_key_env, config.state_dir / KEY_FILE)

    @property
    def source(self) -> str:
        """Where the key comes from, for messages."""
        return f"${self.key_env}" if os.environ.get(self.key_env) else str(self.key_file)

    def has_key(self) -> bool:
        """Whether there is a key already (the variable is set, or the key file exists)."""
        return self._keys is not None or self.key_file.exists()

    def seal(self, token: str) -> str:
        """``token`` sealed with the first key (the key file is made if there is none)."""
        return self._keyring(create=True).encrypt(token.encode()).decode()

    def open(self, sealed: str, what: str) -> str:
        """The token ``sealed`` holds; ``what`` names it in errors. The sealed token is
        kept whatever happens: a wrong key is an error, never a loss."""
        from cryptography.fernet import InvalidToken

        try:
            return self._keyring(create=False).decrypt(sealed.encode()).decode()
        except InvalidToken as exc:
            raise CredentialsKeyError(
                f"{what} cannot be opened with the key from {self.source}: it was stored "
                f"with another key. Set ${self.key_env} to that key (several keys, "
                "comma-separated, open tokens of each); the stored token is kept"
            ) from exc

    def _keyring(self, *, create: bool) -> MultiFernet:
        if self._keys is None:
            if create and not self.key_file.exists():
                self._make_key_file()
            self._keys = self._parse(self._read_key_file(), str(self.key_file))
        return self._keys

    def _parse(self, text: str, where: str) -> MultiFernet:
        from cryptography.fernet import Fernet, MultiFernet

        keys = [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]
        try:
            return MultiFernet([Fernet(key) for key in keys] or [Fernet(b"")])
        except (ValueError, TypeError) as exc:
            raise CredentialsKeyError(
                f"{where} holds no valid key (each is 32 url-safe base64-encoded bytes; "
                "make one with `golem credentials new-key`)"
            ) from exc

    def _read_key_file(self) -> str:
        path = self.key_file
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError as exc:
            raise CredentialsKeyError(
                f"there is no key to open stored forge tokens: set ${self.key_env} to the key "
                f"they were stored with, or restore {path}"
            ) from exc
        except OSError as exc:
            raise CredentialsKeyError(f"cannot read the key file {path}: {exc.strerror}") from exc
        with os.fdopen(fd, "rb") as key_file:
            info = os.fstat(key_file.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                raise CredentialsKeyError(
                    f"the key file {path} is not a regular file of this user: replace it"
                )
            if info.st_mode & 0o077:
                raise CredentialsKeyError(
                    f"the key file {path} may be read by others (mode "
                    f"{stat.S_IMODE(info.st_mode):04o}): `chmod 600 {path}`, and consider "
                    "the tokens it sealed exposed"
                )
            return key_file.read(MAX_KEY_FILE).decode(errors="replace")

    def _make_key_file(self) -> None:
        """Write a new key file: a private temporary file, linked into place only if no
        other process made one meanwhile (then that one's key wins)."""
        directory = self.key_file.parent
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(temporary, flags, 0o600)
            with os.fdopen(fd, "wb") as written:
                written.write(new_key().encode() + b"\n")
                written.flush()
                os.fsync(written.fileno())
            with contextlib.suppress(FileExistsError):  # another process made one first
                os.link(temporary, self.key_file)
        except OSError as exc:
            raise CredentialsKeyError(
                f"cannot make the key file {self.key_file}: {exc.strerror}; set "
                f"${self.key_env} instead"
            ) from exc
        finally:
            temporary.unlink(missing_ok=True)
