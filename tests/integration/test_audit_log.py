"""The audit log kept by the projection workers: every hand's end and game's end of a
partition's stream is a leaf, in stream order; the checkpoints open with the published key;
every proof verifies; a rebuild makes the same checkpoints byte for byte; a restarted worker
extends the tree it left; two partitions keep two logs. Real NATS, real SQLite (and PostgreSQL
where ``SPADES_TEST_POSTGRES_URL`` is set)."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator, Sequence

import pytest
import sqlalchemy as sa
from nats.aio.client import Client
from nats.js import JetStreamContext

from benchmarks.projections import GameLog
from contracts.partitions import ONE, Partitions
from contracts.wire import read_commit
from domain.events import GameEnded, HandDealt, HandScored
from services.projections.audit_log import log_origin
from services.projections.read_models import sign_log
from services.store.audit_log import latest_checkpoint, partial_tree
from services.store.database import Store
from services.store.schema import log_checkpoints, log_leaves
from services.transparency.checkpoint import Checkpoint
from services.transparency.leaves import GameEnd, HandEnd, LogEntry, read_entry
from services.transparency.merkle import (
    MerkleTree,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)
from services.transparency.note import Signer, Verifier, open_note

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import (  # noqa: E402
    append_games,
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
    await fill(js, store, nats_client, logs, batch_size=9)
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
    async with store.reading() as conn:
        head = await latest_checkpoint(conn, 0)
        assert head is not None
        assert head.note is not None
        assert head.verifier == verifier(0).text()
        opened = open_note(head.note, [verifier(0)])
        checkpoint = Checkpoint.parse(opened.text)
        assert (checkpoint.origin, checkpoint.size) == (log_origin(ORIGIN, 0), len(leaves))
        assert checkpoint.root == whole.root()
        # Every inclusion proof, and consistency from every earlier checkpoint.
        for index, (_, _, data) in enumerate(leaves):
            tree = await partial_tree(
                conn,
                0,
                len(leaves),
                lambda t, i=index: t.inclusion_proof(i),  # type: ignore[misc]
            )
            proof = tree.inclusion_proof(index)
            verify_inclusion(leaf_hash(data), index, len(leaves), proof, checkpoint.root)
        earlier = (
            await conn.execute(sa.select(log_checkpoints.c.size, log_checkpoints.c.root))
        ).all()
        assert len(earlier) > 1  # batches of 9 messages: a checkpoint after each with an end
        for size, root in earlier:
            tree = await partial_tree(
                conn,
                0,
                len(leaves),
                lambda t, s=size: t.consistency_proof(s),  # type: ignore[misc]
            )
            proof = tree.consistency_proof(size)
            verify_consistency(size, len(leaves), bytes(root), checkpoint.root, proof)
            assert bytes(root) == whole.root(size)
