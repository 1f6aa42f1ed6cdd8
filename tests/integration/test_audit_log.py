"""The audit log kept by the projection workers: every hand's end and game's end of a
partition's stream is a leaf, in stream order; the checkpoints open with the published key;
every proof verifies; a rebuild keeps the log as it is and appends only what it lacks, even
when it replays the games in another order; a restarted worker
extends the tree it left; two partitions keep two logs. Real NATS, real SQLite (and PostgreSQL
where ``SPADES_TEST_POSTGRES_URL`` is set)."""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from collections.abc import Iterator, Sequence

import pytest
import sqlalchemy as sa
from nats.aio.client import Client
from nats.js import JetStreamContext

from benchmarks.projections import GameLog
from contracts.log_entries import GameEnd, HandEnd, LogEntry, read_entry
from contracts.partitions import ONE, Partitions
from contracts.wire import GAMES_STREAM, read_commit
from domain.events import GameEnded, HandDealt, HandScored
from services.engine.service import ensure_streams
from services.projections.audit_log import LogModel, log_origin
from services.projections.rebuild import rebuild
from services.projections.registry import READ_MODELS, sign_log
from services.store.audit_log import latest_checkpoint, partial_tree
from services.store.database import Store
from services.store.schema import log_leaves
from services.transparency.checkpoint import Checkpoint
from services.transparency.merkle import (
    MerkleTree,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)
from services.transparency.note import NoteError, Signer, Verifier, open_note

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import (  # noqa: E402
    append_games,
    publish_raw,
    random_logs,
    wait_for_positions,
    workers,
)

pytest_plugins = ["tests.integration.conftest_projections"]
pytestmark = pytest.mark.integration

ORIGIN = "spades.test/log"
KEY = Signer.generate(ORIGIN)


@pytest.fixture(autouse=True)
def signing() -> Iterator[None]:
    """The workers sign with the tests' log key; unsigned again afterwards."""
    sign_log(ORIGIN, KEY)
    yield
    sign_log(ORIGIN, None)


def verifier(partition: int) -> Verifier:
    return Verifier(log_origin(ORIGIN, partition), KEY.kind, KEY.verifier.public)


def expected_leaves(game: GameLog) -> list[tuple[str, int | None]]:
    """The game's leaves, in its own order: each hand's end, then its end."""
    return [
        (game.game_id, event.hand if isinstance(event, HandScored) else None)
        for event in game.events
        if isinstance(event, HandScored | GameEnded)
    ]


async def leaves_of(store: Store, partition: int = 0) -> list[tuple[str, int | None, bytes]]:
    query = (
        sa.select(log_leaves.c.game_id, log_leaves.c.hand, log_leaves.c.entry)
        .where(log_leaves.c.partition == partition)
        .order_by(log_leaves.c.leaf_index)
    )
    async with store.reading() as conn:
        return [(game_id, hand, bytes(entry)) for game_id, hand, entry in await conn.execute(query)]


async def rows_of(store: Store, table: sa.Table) -> list[tuple[object, ...]]:
    async with store.reading() as conn:
        query = sa.select(table).order_by(*table.primary_key.columns)
        return [
            tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
            for row in await conn.execute(query)
        ]


async def fill(
    js: JetStreamContext,
    store: Store,
    client: Client,
    logs: Sequence[GameLog],
    layout: Partitions = ONE,
    batch_size: int = 1000,
) -> None:
    """Append the games and let the workers apply them all."""
    await append_games(js, logs, layout)
    lasts = {
        p: int((await js.stream_info(layout.stream(p))).state.last_seq or 0) for p in layout.indexes
    }
    async with workers(store, client, partitions=layout, batch_size=batch_size):
        await wait_for_positions(store, lasts, ["log"])


async def test_every_hand_end_and_game_end_is_a_leaf_whose_proofs_verify(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    logs = random_logs(6, seed=31)
    await fill(js, store, nats_client, logs, batch_size=25)
    leaves = await leaves_of(store)
    # Every game's ends, each game's in its own order; interleaved as the stream holds them.
    assert Counter((g, h) for g, h, _ in leaves) == Counter(
        leaf for game in logs for leaf in expected_leaves(game)
    )
    for game in logs:
        assert [(g, h) for g, h, _ in leaves if g == game.game_id] == expected_leaves(game)
    # What each entry says: the commit's chain link, the deal's commitment and the seed.
    chains = {
        (game.game_id, read_commit(data).version): hashlib.sha256(data).hexdigest()
        for game in logs
        for data in game.payloads
    }
    dealt = {
        (game.game_id, event.hand): event.commitment
        for game in logs
        for event in game.events
        if isinstance(event, HandDealt)
    }
    scored = {
        (game.game_id, event.hand): event
        for game in logs
        for event in game.events
        if isinstance(event, HandScored)
    }
    for game_id, hand, data in leaves:
        entry: LogEntry = read_entry(data)
        assert entry.chain == chains[game_id, entry.version]
        if isinstance(entry, HandEnd):
            assert hand == entry.hand
            assert entry.commitment == dealt[game_id, entry.hand]
            assert entry.seed == scored[game_id, entry.hand].seed
            assert entry.scores == scored[game_id, entry.hand].scores
            assert entry.dealt_version is not None
            assert entry.dealt_chain == chains[game_id, entry.dealt_version]
        else:
            assert isinstance(entry, GameEnd)
            assert hand is None
    # The checkpoint opens with the published key and commits to exactly these leaves.
    whole = MerkleTree(leaf_hash(data) for _, _, data in leaves)
    size = len(leaves)
    async with store.reading() as conn:
        head = await latest_checkpoint(conn, 0)
        assert head is not None
        assert head.note is not None
        assert head.verifier == verifier(0).text()
        opened = open_note(head.note, [verifier(0)])
        checkpoint = Checkpoint.parse(opened.text)
        assert (checkpoint.origin, checkpoint.size) == (log_origin(ORIGIN, 0), len(leaves))
        assert checkpoint.root == whole.root()
        # Every inclusion proof, and consistency from every earlier size: read as the
        # gateway reads them (only the nodes they need), all in one look-up here.
        questions = [functools.partial(MerkleTree.inclusion_proof, index=i) for i in range(size)]
        questions += [
            functools.partial(MerkleTree.consistency_proof, old_size=old) for old in range(size)
        ]
        tree = await partial_tree(conn, 0, size, *questions)
        for index, (_, _, data) in enumerate(leaves):
            proof = tree.inclusion_proof(index)
            verify_inclusion(leaf_hash(data), index, size, proof, checkpoint.root)
        for old in range(size):
            proof = tree.consistency_proof(old)
            verify_consistency(old, size, whole.root(old), checkpoint.root, proof)


async def log_rows(store: Store) -> dict[str, list[tuple[object, ...]]]:
    return {table.name: await rows_of(store, table) for table in LogModel.tables}


async def test_a_rebuild_keeps_the_log_and_replays_only_what_it_lacks(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    """The log is a record: a rebuild of every read model leaves its rows as they are (the same
    size, root and signed checkpoint), even when the replay meets the games in another order
    (as after archiving or a partition move); hands it did not hold append after them."""
    logs = random_logs(6, seed=32)
    await fill(js, store, nats_client, logs[:4], batch_size=40)
    before = await log_rows(store)
    held = await leaves_of(store)
    async with store.reading() as conn:
        old = await latest_checkpoint(conn, 0)
    assert old is not None
    assert before["log_leaves"]
    # The stream purged and its games put back the other way round: a replay in another order.
    await js.purge_stream(GAMES_STREAM)
    for game in reversed(logs[:4]):
        for data in game.payloads:
            await publish_raw(js, game.game_id, data)
    assert sorted(await rebuild(store)) == sorted(READ_MODELS)
    assert await log_rows(store) == before, "a rebuild empties every table but the log's"
    await fill(js, store, nats_client, [])
    assert await log_rows(store) == before, "the replay added nothing twice, reordered nothing"
    await fill(js, store, nats_client, logs[4:])  # new hands append after
    leaves = await leaves_of(store)
    assert leaves[: old.size] == held
    assert [(g, h) for g, h, _ in leaves[old.size :]] == [
        leaf for game in logs[4:] for leaf in expected_leaves(game)
    ]
    async with store.reading() as conn:
        new = await latest_checkpoint(conn, 0)
        assert new is not None
        tree = await partial_tree(
            conn, 0, new.size, lambda t: t.consistency_proof(old.size, new.size)
        )
    verify_consistency(old.size, new.size, old.root, new.root, tree.consistency_proof(old.size))


async def test_a_restarted_worker_extends_the_tree_it_left(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    logs = random_logs(6, seed=33, prefix="restart")
    await fill(js, store, nats_client, logs[:3])
    async with store.reading() as conn:
        old = await latest_checkpoint(conn, 0)
    assert old is not None
    leaves_before = await leaves_of(store)
    await fill(js, store, nats_client, logs[3:])  # new workers: a restart
    async with store.reading() as conn:
        new = await latest_checkpoint(conn, 0)
        assert new is not None
        assert new.size > old.size
        tree = await partial_tree(
            conn, 0, new.size, lambda t: t.consistency_proof(old.size, new.size)
        )
    verify_consistency(old.size, new.size, old.root, new.root, tree.consistency_proof(old.size))
    assert (await leaves_of(store))[: old.size] == leaves_before
    assert len(await leaves_of(store)) == sum(len(expected_leaves(game)) for game in logs)


async def test_two_partitions_keep_two_independent_logs(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    layout = Partitions(2)
    await ensure_streams(js, partitions=layout)
    logs = random_logs(8, seed=34, prefix="parted")
    await fill(js, store, nats_client, logs, layout)
    for partition in layout.indexes:
        games = [game for game in logs if layout.of(game.game_id) == partition]
        assert games, "the seed puts games in both partitions"
        leaves = await leaves_of(store, partition)
        assert {g for g, _, _ in leaves} == {game.game_id for game in games}
        assert len(leaves) == sum(len(expected_leaves(game)) for game in games)
        async with store.reading() as conn:
            head = await latest_checkpoint(conn, partition)
        assert head is not None
        assert head.note is not None
        checkpoint = Checkpoint.parse(open_note(head.note, [verifier(partition)]).text)
        assert checkpoint.origin == f"{ORIGIN}/{partition}"
        assert checkpoint.root == MerkleTree(leaf_hash(data) for _, _, data in leaves).root()
        other = verifier(1 - partition)
        with pytest.raises(NoteError):  # one partition's key name never opens the other's
            open_note(head.note, [other])


async def test_without_a_key_the_log_keeps_its_leaves_and_signs_nothing(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    sign_log(ORIGIN, None)
    await fill(js, store, nats_client, random_logs(2, seed=35, prefix="unsigned"))
    async with store.reading() as conn:
        head = await latest_checkpoint(conn, 0)
    assert head is not None
    assert head.size == len(await leaves_of(store)) > 0
    assert (head.note, head.verifier) == (None, None)
    assert Checkpoint.parse(head.checkpoint).size == head.size
