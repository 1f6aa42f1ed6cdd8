"""Which credentials a process presents: ``SPADES_NATS_CREDS`` (a file or a directory of them)
or the embedded server's in the data directory; and how each kind is handed to nats-py."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.runtime.credentials import (
    BrokerCredentials,
    CredentialsError,
    connect_options,
    new_seed,
    public_key_of,
)
from services.runtime.settings import Settings

JWT_CREDS = """-----BEGIN NATS USER JWT-----
eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln
------END NATS USER JWT------

-----BEGIN USER NKEY SEED-----
{seed}
------END USER NKEY SEED------
"""


def test_a_given_file_is_presented_as_it_is(tmp_path: Path) -> None:
    given = tmp_path / "gateway.creds"
    settings = Settings(data_dir=tmp_path / "var", nats_creds=given)
    assert settings.nats_credentials("gateway") == given
    assert settings.nats_credentials("engine") == given


def test_a_given_directory_holds_one_file_per_user(tmp_path: Path) -> None:
    (tmp_path / "engine.nk").write_bytes(new_seed())
    (tmp_path / "gateway.creds").write_text(JWT_CREDS.format(seed=new_seed().decode()))
    settings = Settings(data_dir=tmp_path / "var", nats_creds=tmp_path)
    assert settings.nats_credentials("engine") == tmp_path / "engine.nk"
    assert settings.nats_credentials("gateway") == tmp_path / "gateway.creds"
    assert settings.nats_credentials("projections") is None


def test_without_a_setting_the_data_directorys_seeds_are_used(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, nats_creds=None)
    assert settings.nats_credentials("admin") is None
    BrokerCredentials(settings.nats_credentials_dir).ensure()
    assert settings.nats_credentials("admin") == tmp_path / "nats" / "credentials" / "admin.nk"


def test_a_seed_file_is_signed_with_and_a_creds_file_carries_its_jwt(tmp_path: Path) -> None:
    seed = tmp_path / "engine.nk"
    seed.write_bytes(new_seed())
    creds = tmp_path / "engine.creds"
    creds.write_text(JWT_CREDS.format(seed=new_seed().decode()))
    assert connect_options(seed) == {"nkeys_seed": str(seed)}
    assert connect_options(creds) == {"user_credentials": str(creds)}
    assert connect_options(None) == {}


def test_missing_credentials_are_named_not_guessed(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match=str(tmp_path / "nowhere.nk")):
        connect_options(tmp_path / "nowhere.nk")


def test_a_seed_is_a_user_key_and_its_public_half_is_what_the_server_holds() -> None:
    seed = new_seed()
    assert seed.startswith(b"SU")
    public = public_key_of(seed)
    assert public.startswith("U")
    assert public != public_key_of(new_seed())
    with pytest.raises(CredentialsError):
        public_key_of(b"SUnot-a-seed")
