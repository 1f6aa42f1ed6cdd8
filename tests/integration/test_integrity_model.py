"""The integrity read model fed commits directly: per finished hand of a league's table, the
facts the signals read (those :func:`~services.integrity.signals.hand_facts` makes of the hand's
record), the same whatever the batches; of any other game only its version; and the hand in
progress sealed as the hands model seals its own, never a card in the clear."""

from __future__ import annotations

import random
from collections.abc import Sequence

import msgspec
import pytest
import sqlalchemy as sa
from nats.aio.client import Client
from nats.js import JetStreamContext

from benchmarks.projections import GameLog, play_game
from domain.events import HandDealt, HandScored, SeatTaken
from domain.game import fold
from domain.league import table_game_id
from domain.records import HandRecorder
from services.integrity.signals import HandFacts, SeatedHand, hand_facts
from services.projections.integrity import MOVES, IntegrityModel
from services.projections.model import Delivered
from services.projections.rebuild import rebuild
from services.runtime.sealing import HANDS_IN_PROGRESS, Sealer, Unsealable
from services.store.database import Store
from services.store.schema import integrity_games, integrity_hands

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import (  # noqa: E402
    TESTS_KEY,
    append_games,
    snapshot,
    wait_for_position,
    workers,
)

pytest_plugins = ["tests.integration.conftest_projections"]
pytestmark = pytest.mark.integration

LEAGUE = "north"


def league_logs(seed: int) -> list[GameLog]:
    """Two tables of the league (cutthroat and partnership, two hands each), and a game that
    names the league but is none of its tables."""
    rng = random.Random(seed)
    tables = [
        play_game(rng, table_game_id(LEAGUE, 1, table), preset=preset, max_hands=2, league=LEAGUE)
        for table, preset in enumerate(("cutthroat", "partnership"), start=1)
    ]
    return [*tables, play_game(rng, "g1", preset="solo", max_hands=1, league=LEAGUE)]


def expected_facts(log: GameLog) -> list[HandFacts]:
    """The facts of every hand of a game, straight from its events."""
    game = fold(log.events)
    assert game is not None
    players = tuple(e.player for e in log.events if isinstance(e, SeatTaken))
    recorder = HandRecorder()
    records = [record for e in log.events if (record := recorder.feed(e)) is not None]
    return [
        hand_facts(SeatedHand(game_id=log.game_id, rules=game.rules, players=players, record=r))
        for r in records
    ]


def untimed_facts(facts: HandFacts) -> HandFacts:
    """The facts without their decision times (a hand record carries no clock)."""
    return msgspec.structs.replace(facts, seconds=())


def moves_by_seat(logs: Sequence[GameLog], game_id: str, hand: int) -> list[int]:
    """How many moves each seat made in the hand (its bids, passes, discards, draws, cards):
    each is timed from the commit before it (the deal's, for the first)."""
    log = next(log for log in logs if log.game_id == game_id)
    counts: list[int] = []
    number = 0
    for event in log.events:
        if isinstance(event, HandDealt):
            number = event.hand
            counts = [0] * len(event.hands)
        elif number == hand and isinstance(event, MOVES):
            counts[event.seat] += 1
        elif number == hand and isinstance(event, HandScored):
            return counts
    raise AssertionError(f"no hand {hand} in {game_id}")


def model() -> IntegrityModel:
    return IntegrityModel(Sealer(TESTS_KEY, HANDS_IN_PROGRESS))


async def apply(store: Store, batches: Sequence[Sequence[Delivered]]) -> None:
    folding = model()
    for batch in batches:
        async with store.writing() as conn:
            assert await folding.apply(conn, batch) == {}


async def stored_facts(store: Store) -> dict[tuple[str, int], tuple[str, HandFacts]]:
    async with store.reading() as conn:
        rows = (await conn.execute(sa.select(integrity_hands))).all()
    return {
        (game_id, hand): (league, msgspec.convert(facts, HandFacts))
        for game_id, hand, league, facts in rows
    }


async def test_each_league_hand_is_kept_as_its_facts_whatever_the_batches(store: Store) -> None:
    logs = league_logs(seed=3)
    delivered = [
        Delivered(n, commit)
        for n, commit in enumerate((c for log in logs for c in log.commits), start=1)
    ]
    await apply(store, [delivered[k : k + 1] for k in range(len(delivered))])
    one_by_one = await stored_facts(store)
    expected = {
        (facts.game_id, facts.hand): (LEAGUE, facts)
        for log in logs[:2]
        for facts in expected_facts(log)
    }
    assert len(expected) == 4
    untimed = {key: (league, untimed_facts(facts)) for key, (league, facts) in one_by_one.items()}
    assert untimed == expected
    assert any(facts.chances for _, facts in expected.values())
    for (game_id, hand), (_, facts) in one_by_one.items():  # a time for each seat's every move
        assert [len(times) for times in facts.seconds] == moves_by_seat(logs, game_id, hand)
        assert all(time >= 0 for times in facts.seconds for time in times)

    async with store.writing() as conn:
        await conn.execute(integrity_hands.delete())
        await conn.execute(integrity_games.delete())
    await apply(store, [delivered])
    assert await stored_facts(store) == one_by_one

    async with store.reading() as conn:
        games = {row.game_id: row for row in (await conn.execute(sa.select(integrity_games)))}
    assert set(games) == {log.game_id for log in logs}
    other = games["g1"]
    assert (other.league, other.rules, other.pending) == (None, None, None)
    assert other.version == logs[2].commits[-1].version


async def test_a_hand_in_progress_is_kept_sealed(store: Store) -> None:
    (table, *_) = league_logs(seed=5)
    half = table.commits[: len(table.commits) // 2]
    await apply(store, [[Delivered(n, c) for n, c in enumerate(half, start=1)]])
    async with store.reading() as conn:
        (pending,) = (await conn.execute(sa.select(integrity_games.c.pending))).scalars()
    assert b"hand_dealt" not in pending
    assert b'"hands"' not in pending
    opener = Sealer(TESTS_KEY, HANDS_IN_PROGRESS)
    assert b'"hand_dealt"' in opener.open(pending, table.game_id)
    with pytest.raises(Unsealable):
        opener.open(pending, "another-game")
    with pytest.raises(RuntimeError, match="needs the key"):
        async with store.writing() as conn:
            await IntegrityModel().apply(conn, [Delivered(len(half) + 1, table.commits[len(half)])])


async def test_a_rebuild_gives_the_same_rows_to_the_byte(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    """Through the workers, from the stream: the integrity model rebuilt while the others
    stand ends with the rows it had (its hand in progress opened: each sealing draws its own
    nonce), and the league's hands are all there."""
    finished = league_logs(seed=7)
    rng = random.Random(8)
    playing = play_game(rng, table_game_id(LEAGUE, 2, 1), preset="cutthroat", league=LEAGUE)
    half = len(playing.commits) // 2
    halfway = GameLog(playing.game_id, playing.commits[:half], playing.payloads[:half])
    last = await append_games(js, [*finished, halfway])
    async with workers(store, nats_client):
        await wait_for_position(store, last)
        before = await snapshot(store)
        assert await rebuild(store, ["integrity"]) == ["integrity"]
        await wait_for_position(store, last)
    assert await snapshot(store) == before
    assert len(before["integrity_hands"]) == 4 + len(expected_facts(halfway))
    (progress,) = [row for row in before["integrity_games"] if row[0] == playing.game_id]
    assert progress[5] is not None
    assert progress[5].startswith(b"[")
