"""The webhooks' tables on SQLite and PostgreSQL: endpoints kept per platform, the outbox giving
each chain's deliveries in order, one claim at a time, replays, disabling, forgetting; and
backups carrying the endpoints."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
import sqlalchemy as sa
from nats.aio.client import Client
from nats.js import JetStreamContext
from sqlalchemy.ext.asyncio import AsyncConnection

from contracts.wire import GAMES_STREAM, LEAGUES_STREAM
from services.backup.deployment import restore_backup, take_backup
from services.backup.manifest import BackupError
from services.backup.webhook_endpoints import SavedEndpoint
from services.runtime.broker_users import ADMIN
from services.runtime.nats import connect
from services.runtime.nats_server import EmbeddedNats
from services.runtime.settings import SIGNING_KEY_FILENAME, Settings
from services.runtime.webhook_signing import new_secret
from services.store import migrations
from services.store import webhook_endpoints as endpoints
from services.store.database import Store, open_store
from services.store.schema import webhook_deliveries
from services.store.webhook_endpoints import Endpoint
from services.webhooks import outbox

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import append_games, random_logs  # noqa: E402

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.integration.conftest_projections"]

NOW = 1_800_000_000.0


def endpoint(name: str, platform: str = "acme", **changes: object) -> Endpoint:
    values: dict[str, object] = {
        "id": f"ep_{name:0>24}",
        "platform": platform,
        "url": f"https://{name}.example/hooks",
        "events": ("game.turn", "game.finished"),
        "secret": new_secret(),
        "created_at": NOW,
        "starts": {GAMES_STREAM: 0, LEAGUES_STREAM: 0},
        **changes,
    }
    return Endpoint(**values)  # type: ignore[arg-type]


def pending(to: Endpoint, message: str, chain: str, status: str = outbox.PENDING) -> outbox.Pending:
    return outbox.Pending(
        to.id, message, "game.turn", chain, f'{{"m":"{message}"}}'.encode(), status
    )


@contextlib.asynccontextmanager
async def looking(store: Store) -> AsyncIterator[AsyncConnection]:
    """A transaction whose writes are rolled back: a claim made only to see what it takes."""
    async with store.engine.connect() as conn:
        transaction = await conn.begin()
        try:
            yield conn
        finally:
            await transaction.rollback()


async def take(
    conn: AsyncConnection,
    at: float = NOW,
    *,
    token: str = "look",
    room: dict[str, int] | None = None,
    per_endpoint: int = 100,
    run_length: int = 1,
) -> list[list[outbox.Due]]:
    """What one claim takes: runs of chains, each in order (by default each chain's head)."""
    claimed = await outbox.claim(
        conn,
        token,
        at,
        at + 5,
        chains=100,
        room=room or {},
        per_endpoint=per_endpoint,
        run_length=run_length,
    )
    return claimed.runs


async def heads(store: Store, at: float = NOW, **options: object) -> list[tuple[str, str]]:
    """The heads a claim at ``at`` would take (nothing is kept)."""
    async with looking(store) as conn:
        found = await take(conn, at, **options)  # type: ignore[arg-type]
    return [(run[0].chain, run[0].message_id) for run in found]


async def test_endpoints_belong_to_their_platform(store: Store) -> None:
    acme, rival, local = (
        endpoint("a"),
        endpoint("r", "rival"),
        endpoint("l", endpoints.LOCAL_PLATFORM),
    )
    async with store.writing() as conn:
        for one in (acme, rival, local):
            await endpoints.add(conn, one)
    async with store.reading() as conn:
        assert await endpoints.endpoints_of(conn, "acme") == [acme]
        assert await endpoints.find(conn, "acme", rival.id) is None
        assert await endpoints.find(conn, "", local.id) == local
        assert await endpoints.count_of(conn, "rival") == 1
    async with store.writing() as conn:
        assert not await endpoints.remove(conn, "acme", rival.id)
        assert await endpoints.remove(conn, "rival", rival.id)
    async with store.writing() as conn:  # held against deletion while deliveries are recorded
        held = await endpoints.every_endpoint(conn, hold=True)
    assert [e.id for e in held] == sorted([acme.id, local.id])


async def test_each_chain_gives_its_first_pending_delivery_only_and_in_order(store: Store) -> None:
    one, two = endpoint("one"), endpoint("two")
    async with store.writing() as conn:
        await endpoints.add(conn, one)
        await endpoints.add(conn, two)
        await outbox.record(
            conn,
            [
                pending(one, "m1", "game:a"),
                pending(one, "m2", "game:b"),
                pending(one, "m3", "game:a"),
                pending(two, "m4", "game:a"),
                pending(one, "m5", "game:a"),
            ],
            NOW,
        )
    assert await heads(store) == [("game:a", "m1"), ("game:b", "m2"), ("game:a", "m4")]
    assert await heads(store, NOW - 1) == [], "nothing is due before its time"
    assert await heads(store, room={one.id: 0}) == [("game:a", "m4")], "one's chains are enough"
    assert await heads(store, room={one.id: 1}) == [("game:a", "m1"), ("game:a", "m4")]

    async with store.writing() as conn:
        runs = await take(conn, token="t", run_length=10)
    [run] = [run for run in runs if run[0].message_id == "m1"]
    assert [d.message_id for d in run] == ["m1", "m3", "m5"], "a chain's run, in order"
    assert {d.url for d in run} == {one.url}
    assert await heads(store, NOW + 1) == [], "every chain is claimed"
    first, rest = run[0], run[1:]

    async with store.writing() as conn:
        await outbox.delivered(conn, [outbox.Acknowledged(first.id, 200, NOW + 1)])
        assert await outbox.failed_try(
            conn, rest[0].id, "t", 503, "answered 503", NOW + 1, NOW + 60
        )
        for endpoint_id, chain in ((one.id, "game:a"), (one.id, "game:b"), (two.id, "game:a")):
            await outbox.release(conn, "t", endpoint_id, chain)
    assert await heads(store, NOW + 2) == [("game:b", "m2"), ("game:a", "m4")], (
        "m3 waits for its next try, and m5 behind it"
    )
    assert await heads(store, NOW + 60) == [("game:b", "m2"), ("game:a", "m4"), ("game:a", "m3")], (
        "longest waiting first"
    )
    async with store.reading() as conn:
        assert await outbox.next_due(conn) == NOW
        log = await endpoints.deliveries_of(conn, one.id, limit=10)
    assert [(d.message_id, d.status, d.attempts, d.last_status) for d in log] == [
        ("m5", "pending", 0, None),
        ("m3", "pending", 1, 503),
        ("m2", "pending", 0, None),
        ("m1", "delivered", 1, 200),
    ]


async def test_tries_acknowledged_together_are_recorded_each_with_its_own_answer(
    store: Store,
) -> None:
    one = endpoint("one")
    chains = ("game:a", "game:b", "game:c")
    async with store.writing() as conn:  # as the ingest records them
        await endpoints.add(conn, one)
        await outbox.record(conn, [pending(one, f"m-{c}", c) for c in chains], NOW)
    async with store.writing() as conn:  # as the recorder writes what the chains' tries got
        runs = await take(conn, token="t")
        a, b, _ = sorted((run[0] for run in runs), key=lambda due: due.chain)
        await outbox.delivered(
            conn, [outbox.Acknowledged(a.id, 200, NOW + 1), outbox.Acknowledged(b.id, 204, NOW + 2)]
        )
    async with store.reading() as conn:
        log = await endpoints.deliveries_of(conn, one.id, limit=10)
    assert [(d.chain, d.status, d.attempts, d.last_status, d.last_attempt_at) for d in log] == [
        ("game:c", "pending", 0, None, None),
        ("game:b", "delivered", 1, 204, NOW + 2),
        ("game:a", "delivered", 1, 200, NOW + 1),
    ]


async def test_a_disabled_endpoint_is_skipped_and_a_replay_sends_each_event_once_more(
    store: Store,
) -> None:
    one = endpoint("one")
    async with store.writing() as conn:
        await endpoints.add(conn, one)
        await outbox.record(conn, [pending(one, f"m{n}", "game:a") for n in range(1, 5)], NOW)
        [[first]] = await take(conn, token="t")  # the chain's first only
        await outbox.delivered(conn, [outbox.Acknowledged(first.id, 204, NOW)])
    async with store.writing() as conn:
        [[head]] = await take(conn, token="t")
        await outbox.failed_try(conn, head.id, "t", None, "no answer", NOW + 5, None)
        await outbox.disable(conn, one.id, "every try failed", NOW + 5)
    assert await heads(store, NOW + 100) == [], "a disabled endpoint is sent nothing"
    async with store.reading() as conn:
        [disabled] = await endpoints.endpoints_of(conn, "acme")
        statuses = [d.status for d in await endpoints.deliveries_of(conn, one.id, limit=10)]
    assert (disabled.enabled, disabled.disabled_reason) == (False, "every try failed")
    assert statuses == ["skipped", "skipped", "failed", "delivered"]

    async with store.writing() as conn:
        assert await endpoints.replay(conn, disabled, NOW, NOW + 10) == 4
        [revived] = await endpoints.endpoints_of(conn, "acme")
        assert await endpoints.replay(conn, revived, NOW, NOW + 11) == 0, "all still queued"
    assert revived.enabled
    assert await heads(store, NOW + 10) == [("game:a", "m1")]
    async with store.reading() as conn:
        log = await endpoints.deliveries_of(conn, one.id, limit=3)
        older = await endpoints.deliveries_of(conn, one.id, limit=10, before=log[-1].id)
    assert [d.message_id for d in reversed(log)] == ["m2", "m3", "m4"]
    assert len(older) == 5
    assert first.message_id == "m1"


async def test_old_finished_deliveries_and_those_of_deleted_endpoints_are_forgotten(
    store: Store,
) -> None:
    one, gone = endpoint("one"), endpoint("gone")
    async with store.writing() as conn:
        await endpoints.add(conn, one)
        await outbox.record(conn, [pending(one, "old", "game:a")], NOW - 100)
        await outbox.record(conn, [pending(one, "waiting", "game:b")], NOW - 100)
        await outbox.record(conn, [pending(gone, "orphan", "game:a")], NOW)
        await outbox.record(conn, [pending(one, "new", "game:c")], NOW)
        [old] = [run[0] for run in await take(conn) if run[0].message_id == "old"]
        await outbox.delivered(conn, [outbox.Acknowledged(old.id, 200, NOW)])
        assert await outbox.prune(conn, NOW - 50) == 2
        kept = (await conn.execute(sa.select(webhook_deliveries.c.message_id))).scalars().all()
    assert sorted(kept) == ["new", "waiting"]


async def test_a_position_is_held_by_one_writer_and_moved_with_its_stream(store: Store) -> None:
    stream = "SPADES_GAMES_1"
    async with store.writing() as conn:
        assert await outbox.lock_position(conn, stream) == outbox.Position(0, None, known=False)
        await outbox.set_position(conn, stream, 42, "2026-01-01T00:00:00.000000+00:00")
    async with store.writing() as conn:
        held = await outbox.lock_position(conn, stream)
        await outbox.set_position(conn, stream, 50, held.stream_created or "")
    async with store.writing() as conn:
        assert await outbox.lock_position(conn, stream) == outbox.Position(
            50, "2026-01-01T00:00:00.000000+00:00", known=True
        )
        assert not (await outbox.lock_position(conn, "SPADES_GAMES_0")).known
        assert not (await outbox.lock_position(conn, LEAGUES_STREAM)).known


async def test_an_earlier_deployments_endpoints_and_positions_keep_their_places(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migrated from the schema of one games stream: an endpoint's ``games_after`` is its
    starting point in SPADES_GAMES, ``leagues_after`` in SPADES_LEAGUES; the worker's positions
    are named after their streams; pending deliveries are claimed by nobody."""
    earlier = open_store(database_url)
    try:
        monkeypatch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:6])
        monkeypatch.setattr(migrations, "LATEST", 6)
        await migrations.migrate(earlier)
        async with earlier.writing() as conn:
            await conn.execute(
                sa.text(
                    "INSERT INTO webhook_endpoints (id, platform, url, events, secret, "
                    "created_at, games_after, leagues_after) VALUES ('ep_old', 'acme', "
                    "'https://old.example/', '[\"game.turn\"]', 'whsec_x', 1, 40, 7)"
                )
            )
            for stream, position in (("games", 41), ("leagues", 8)):
                await conn.execute(
                    sa.text(
                        "INSERT INTO webhook_positions (stream, position, stream_created, "
                        "updated_at) VALUES (:stream, :position, 'then', 'then')"
                    ),
                    {"stream": stream, "position": position},
                )
            await conn.execute(
                sa.text(
                    "INSERT INTO webhook_deliveries (endpoint_id, message_id, event_type, chain, "
                    "body, status, attempts, created_at, next_try) VALUES ('ep_old', 'm1', "
                    "'game.turn', 'game:a', '{}', 'pending', 0, 1, 1)"
                )
            )
        monkeypatch.undo()
        assert await migrations.migrate(earlier) == 6
        async with earlier.reading() as conn:
            [old] = await endpoints.every_endpoint(conn)
            positions = {
                stream: (await outbox.lock_position(conn, stream)).position
                for stream in (GAMES_STREAM, LEAGUES_STREAM)
            }
        assert old.starts == {GAMES_STREAM: 40, LEAGUES_STREAM: 7}
        assert (old.after(GAMES_STREAM), old.after("SPADES_GAMES_0")) == (40, None)
        assert positions == {GAMES_STREAM: 41, LEAGUES_STREAM: 8}
        assert await heads(earlier, 2) == [("game:a", "m1")]
    finally:
        await earlier.close()


# --------------------------------------------------------------------------- backups


async def test_a_backup_carries_the_endpoints_and_a_restore_starts_them_after_the_history(
    js: JetStreamContext, nats_client: Client, tmp_path: Path
) -> None:
    last = await append_games(js, random_logs(2, seed=61))
    source = Settings(data_dir=tmp_path / "source", secret_key=None)
    source.data_dir.mkdir()
    (source.data_dir / SIGNING_KEY_FILENAME).write_bytes(bytes(32))
    from services.store.migrations import migrate

    kept = [endpoint("a"), endpoint("b", "rival", disabled_at=NOW, disabled_reason="dead")]
    store = open_store(source.read_model_database_url)
    try:
        await migrate(store)
        async with store.writing() as conn:
            for one in kept:
                await endpoints.add(conn, one)
    finally:
        await store.close()
    folder = tmp_path / "backup"
    manifest = await take_backup(source, nats_client, folder)
    assert [k.name for k in manifest.outside] == [
        "signing key",
        "webhook endpoints",
        "audit log",
    ]
    assert (folder / "webhook_endpoints.json").stat().st_mode & 0o077 == 0
    assert {e["secret"] for e in json.loads((folder / "webhook_endpoints.json").read_text())} == {
        one.secret for one in kept
    }

    async with EmbeddedNats(tmp_path / "fresh-nats") as fresh:
        client = await connect(fresh.url, "pytest", credentials=fresh.credentials_for(ADMIN))
        try:
            clash = Settings(data_dir=tmp_path / "clash", secret_key=None)
            clashing = open_store(clash.read_model_database_url)
            try:
                await migrate(clashing)
                async with clashing.writing() as conn:
                    await endpoints.add(conn, endpoint("a", secret=new_secret()))
            finally:
                await clashing.close()
            with pytest.raises(BackupError, match="another platform, URL or secret"):
                await restore_backup(clash, client, folder)
            assert await client.jetstream().streams_info() == [], "nothing was restored"

            target = Settings(data_dir=tmp_path / "target", secret_key=None)
            restored = await restore_backup(target, client, folder)
            assert "webhook endpoints: 2 restored" in " ".join(restored.outside)
        finally:
            await client.close()
    store = open_store(target.read_model_database_url)
    try:
        async with store.reading() as conn:
            back = await endpoints.every_endpoint(conn)
    finally:
        await store.close()
    assert [(e.id, e.platform, e.url, e.secret, e.disabled_reason) for e in back] == [
        (e.id, e.platform, e.url, e.secret, e.disabled_reason) for e in kept
    ]
    leagues_last = int((await js.stream_info(LEAGUES_STREAM)).state.last_seq or 0)
    assert [e.starts for e in back] == [{GAMES_STREAM: last, LEAGUES_STREAM: leagues_last}] * 2
    assert last == int((await js.stream_info(GAMES_STREAM)).state.last_seq or 0)


def test_an_endpoint_backed_up_before_starting_points_per_stream_starts_where_it_did() -> None:
    saved = msgspec.json.decode(
        json.dumps(
            {
                "id": "ep_old",
                "platform": "acme",
                "url": "https://old.example/",
                "events": ["game.turn"],
                "secret": "whsec_x",
                "created_at": 1.0,
                "games_after": 40,
                "leagues_after": 7,
            }
        ),
        type=SavedEndpoint,
    )
    assert saved.endpoint().starts == {GAMES_STREAM: 40, LEAGUES_STREAM: 7}
