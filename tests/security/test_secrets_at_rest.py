"""Secrets at rest (issue 29, item 4): what a deployment writes is its user's alone, and the
read-model database holds no webhook secret and no hand in progress in the clear, on SQLite and
PostgreSQL alike; a database an earlier version made is sealed by the upgrade."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import sqlalchemy as sa

from services.projections.hands import HandsModel
from services.projections.model import Delivered
from services.runtime.sealing import HANDS_IN_PROGRESS, WEBHOOK_SECRETS, Sealer, Unsealable
from services.runtime.webhook_signing import new_secret
from services.store.database import Store, open_store
from services.store.migrations import LATEST, migrate
from services.store.schema import hand_progress, schema_version, webhook_endpoints

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import TESTS_KEY, random_logs  # noqa: E402

pytest_plugins = ["tests.integration.conftest_projections"]
pytestmark = pytest.mark.integration

SEALING = 10
"""The migration that seals what earlier versions kept in the clear."""


def _others_bits(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode) & 0o077


async def test_the_sqlite_database_and_its_directory_are_private(tmp_path: Path) -> None:
    """Created under a permissive umask, in a directory an earlier version left 0755: the
    directory becomes 0700, and the database, its WAL and shared memory are 0600."""
    data = tmp_path / "var"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    earlier = os.umask(0o022)
    try:
        store = open_store(f"sqlite:///{data / 'read_models.db'}")
        try:
            await migrate(store, secret=TESTS_KEY)
            async with store.writing() as conn:  # a write: the WAL and its index exist now
                await conn.execute(sa.delete(hand_progress))
            files = sorted(path.name for path in data.iterdir())
            assert {"read_models.db", "read_models.db-wal", "read_models.db-shm"} <= set(files)
            assert stat.S_IMODE(data.stat().st_mode) == 0o700
            print(
                "modes:", {name: oct(stat.S_IMODE((data / name).stat().st_mode)) for name in files}
            )
            assert {name: _others_bits(data / name) for name in files} == dict.fromkeys(files, 0)
        finally:
            await store.close()
    finally:
        os.umask(earlier)


async def test_no_hand_in_progress_is_kept_in_the_clear(store: Store) -> None:
    """Half-way through games, ``hand_progress`` holds each hand's deal and moves, sealed:
    neither the deal's event nor any of its cards can be read from the row, and the row opens,
    with the key, to the events, and only under its own game."""
    logs = random_logs(3, seed=5)
    model = HandsModel(Sealer(TESTS_KEY, HANDS_IN_PROGRESS))
    async with store.writing() as conn:
        for log in logs:
            half = log.commits[: len(log.commits) // 2]
            await model.apply(conn, [Delivered(n, c) for n, c in enumerate(half, 1)])
    async with store.reading() as conn:
        rows = (await conn.execute(sa.select(hand_progress))).all()
    assert len(rows) == len(logs)
    opener = Sealer(TESTS_KEY, HANDS_IN_PROGRESS)
    dealt = 0
    for game_id, _version, pending in rows:
        opened = opener.open(pending, game_id)
        assert opened.startswith(b"[")
        dealt += b'"hand_dealt"' in opened
        assert b"hand_dealt" not in pending
        assert b'"hands"' not in pending
        with pytest.raises(Unsealable):
            opener.open(pending, "another-game")
        with pytest.raises(Unsealable):
            Sealer(b"another key", HANDS_IN_PROGRESS).open(pending, game_id)
    assert dealt == len(logs)


async def test_an_upgrade_seals_the_secrets_an_earlier_version_kept(database_url: str) -> None:
    """A database at schema 9 with a webhook secret and a hand in progress in the clear: the
    upgrade without the key (a command run apart from the services) stops before the sealing
    step; a service with the key seals both, and they open to what they were."""
    store = open_store(database_url)
    plain_secret = new_secret()
    plain_hand = b'[{"type":"hand_dealt","hands":[["AS","KS"]]}]'
    try:
        await migrate(store, up_to=SEALING - 1)
        async with store.writing() as conn:
            await conn.execute(
                webhook_endpoints.insert().values(
                    id="ep_old",
                    platform="acme",
                    url="https://hooks.example/in",
                    events=["game_ended"],
                    secret=plain_secret,
                    created_at=0.0,
                    starts={},
                )
            )
            await conn.execute(
                hand_progress.insert().values(game_id="g-old", version=3, pending=plain_hand)
            )
        assert await migrate(store) == SEALING - 1  # no key: nothing sealed, nothing recorded
        assert await _stored(store) == (plain_secret, plain_hand)
        assert await migrate(store, secret=TESTS_KEY) == SEALING - 1
        secret, pending = await _stored(store)
        assert plain_secret not in secret
        assert plain_secret.removeprefix("whsec_") not in secret
        assert b"hand_dealt" not in pending
        assert Sealer(TESTS_KEY, WEBHOOK_SECRETS).open_text(secret, "ep_old") == plain_secret
        assert Sealer(TESTS_KEY, HANDS_IN_PROGRESS).open(pending, "g-old") == plain_hand
        async with store.reading() as conn:
            top = await conn.scalar(sa.select(sa.func.max(schema_version.c.version)))
        assert top == LATEST
    finally:
        await store.close()


async def _stored(store: Store) -> tuple[str, bytes]:
    async with store.reading() as conn:
        secret = await conn.scalar(sa.select(webhook_endpoints.c.secret))
        pending = await conn.scalar(sa.select(hand_progress.c.pending))
    assert secret is not None
    assert pending is not None
    return str(secret), bytes(pending)
