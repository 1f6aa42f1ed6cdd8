"""The broker's credentials: an nkey per user of :mod:`services.runtime.broker_users`.

An nkey is an Ed25519 key pair. The server's configuration names each user by its public key
only; the client proves it holds the seed (the private key) by signing a nonce the server sends
when it connects. So no secret is ever sent over the connection nor written into the server's
configuration, and the same client code also takes the ``.creds`` file of a JWT deployment
(a user JWT and its seed), which nats-py signs the same way.

For the embedded server the seeds are files ``<user>.nk`` (mode 0600, in a 0700 directory),
made once and kept: the server's configuration is rendered from their public keys at every
start, and each process reads its own seed file when it connects.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import nkeys

from services.runtime.broker_users import BROKER_USERS

if TYPE_CHECKING:
    from faststream.nats.security import NatsSecurity

SEED_SUFFIX = ".nk"
JWT_MARK = b"BEGIN NATS USER JWT"
SEED_BYTES = 32


class CredentialsError(RuntimeError):
    """A credentials file is missing, unreadable or not credentials."""


def new_seed() -> bytes:
    """A fresh user nkey seed (``SU...``)."""
    seed: bytes = nkeys.encode_seed(secrets.token_bytes(SEED_BYTES), nkeys.PREFIX_BYTE_USER)
    return seed


def public_key_of(seed: bytes) -> str:
    """The public key (``U...``) of a user seed."""
    try:
        key_pair = nkeys.from_seed(bytearray(seed.strip()))
    except nkeys.NkeysError as error:
        raise CredentialsError(f"not an nkey seed ({error})") from None
    public: bytes = key_pair.public_key
    return public.decode()


class BrokerCredentials:
    """The seed files of every broker user, in one directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory.absolute()

    def __repr__(self) -> str:
        return f"BrokerCredentials({str(self.directory)!r})"

    def path(self, user: str) -> Path:
        """Where ``user``'s seed is kept (a path: give it to a process, never the seed)."""
        if user not in BROKER_USERS:
            raise KeyError(f"no broker user {user!r}; known: {', '.join(BROKER_USERS)}")
        return self.directory / f"{user}{SEED_SUFFIX}"

    def ensure(self) -> Self:
        """Make the seeds that are missing; those there are kept (tokens stay valid)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.directory.chmod(0o700)
        for user in BROKER_USERS:
            path = self.path(user)
            if not path.exists():
                _create_private_file(path, new_seed() + b"\n")
        return self

    def public_key(self, user: str) -> str:
        path = self.path(user)
        try:
            return public_key_of(path.read_bytes())
        except OSError as error:
            raise CredentialsError(f"{path}: cannot be read ({error.strerror})") from None
        except CredentialsError as error:
            raise CredentialsError(f"{path}: {error}") from None


def _create_private_file(path: Path, content: bytes) -> None:
    # Written to a private temporary file and linked into place: link() fails if the file
    # already exists, so two processes starting at once agree on one complete seed.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as private:
            private.write(content)
        with contextlib.suppress(FileExistsError):  # another process was first: its file wins
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _is_jwt_creds(path: Path) -> bool:
    try:
        return JWT_MARK in path.read_bytes()
    except OSError as error:
        raise CredentialsError(
            f"NATS credentials {path} cannot be read ({error.strerror})"
        ) from None


def connect_options(path: Path | None) -> dict[str, Any]:
    """nats-py ``connect()`` options that present the credentials in ``path``: a ``.creds``
    file (a user JWT and its seed) or an nkey seed file. None: no credentials."""
    if path is None:
        return {}
    if _is_jwt_creds(path):
        return {"user_credentials": str(path)}
    return {"nkeys_seed": str(path)}


def faststream_security(path: Path | None) -> NatsSecurity | None:
    """The same, for a FastStream ``NatsBroker(security=...)``."""
    from faststream.nats.security import NatsCredentials, NatsNKey

    if path is None:
        return None
    if _is_jwt_creds(path):
        return NatsCredentials(str(path))
    return NatsNKey.from_file(path)
