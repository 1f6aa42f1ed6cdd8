"""The read models against the domain's own replay, on a real NATS server and real databases."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext

from benchmarks.projections import GameLog, GameWriter, play_game
from contracts.wire import ActRequest, CommandRequest, CreateGameRequest, TakeSeatRequest
from domain.bids import Bid
from domain.commands import (
    CreateGame,
    PlaceBid,
    PlayerAction,
    RecordTally,
    TakeSeat,
    to_api,
)
from domain.game import DiscardDue, PassDue, decide, legal_actions
from domain.records import hand_records
from domain.shuffle import SeededDeal
from domain.state import Game, cards_held
from domain.table import table_for
from services.engine.engine import Engine
from services.projections.hands import HandsModel
from services.projections.model import Delivered
from services.runtime.game_stream import GameStream
from services.runtime.sealing import HANDS_IN_PROGRESS, Sealer
from services.store import queries
from services.store.database import Store

# Its fixtures come in as a plugin and its helpers by import: rewrite its asserts before either.
pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import (  # noqa: E402
    append_games,
    as_json,
    expected_scoreboard,
    final_state,
    random_logs,
    wait_for_position,
    workers,
)

pytest_plugins = ["tests.integration.conftest_projections"]
pytestmark = pytest.mark.integration


def expected_summary(log: GameLog, league: str | None) -> dict[str, Any]:
    game = final_state(log.events)
    return {
        "game_id": game.game_id,
        "status": game.status,
        "preset": game.rules.preset,
        "league": league,
        "players": [player.name if player else None for player in game.players],
        "scores": list(game.scores),
        "bags": list(game.bags),
        "winners": list(game.winners),
        "hands_played": game.hands_played,
        "version": game.version,
        "created_at": log.commits[0].time,
        "updated_at": log.commits[-1].time,
    }


async def summary_of(store: Store, game_id: str) -> dict[str, Any]:
    games, cursor = await queries.list_games(store.engine, limit=200)
    assert cursor is None
    (summary,) = [game for game in games if game["game_id"] == game_id]
    return summary


async def check_against_domain(store: Store, log: GameLog, league: str | None) -> None:
    """Every read model of one game equals what the domain makes of its events."""
    engine = store.engine
    records = [as_json(record) for record in hand_records(log.events)]
    assert records, "a finished game has at least one hand"
    assert await queries.hand_records(engine, log.game_id) == records
    for number, record in enumerate(records, start=1):
        assert await queries.hand_record(engine, log.game_id, number) == record
    assert await queries.hand_record(engine, log.game_id, len(records) + 1) is None
    assert await queries.scoreboard(engine, log.game_id) == expected_scoreboard(log.events)
    assert await summary_of(store, log.game_id) == expected_summary(log, league)
    assert await queries.model_version(engine, log.game_id) == final_state(log.events).version


async def test_read_models_equal_the_domain_replay(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    logs = random_logs(15, seed=5)
    last = await append_games(js, logs)
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    for number, log in enumerate(logs):
        await check_against_domain(store, log, league="north" if number % 2 else None)
    assert await queries.hand_records(store.engine, "no-such-game") == []
    assert await queries.scoreboard(store.engine, "no-such-game") is None
    assert await queries.model_version(store.engine, "no-such-game") == 0


async def test_a_rolled_back_batch_leaves_no_trace(store: Store) -> None:
    """The hands model keeps recorders in memory between batches; one whose batch was rolled
    back must not be used again."""
    (log,) = random_logs(1, seed=21)
    model = HandsModel(Sealer(b"the service's key", HANDS_IN_PROGRESS))
    batch = [Delivered(sequence, commit) for sequence, commit in enumerate(log.commits, 1)]
    half = len(batch) // 2
    async with store.writing() as conn:
        assert await model.apply(conn, batch[:half]) == {}

    async def fail_after_saving() -> None:
        async with store.writing() as conn:
            await model.apply(conn, batch[half:])
            raise RuntimeError("the transaction fails after the model saved")

    with pytest.raises(RuntimeError, match="after the model saved"):
        await fail_after_saving()
    assert await queries.hand_records(store.engine, log.game_id) == []
    async with store.writing() as conn:
        assert await model.apply(conn, batch[half:]) == {}
    records = [as_json(record) for record in hand_records(log.events)]
    assert await queries.hand_records(store.engine, log.game_id) == records


async def play_through_engine(engine: Engine, game_id: str, rng: random.Random) -> None:
    """A game played to its end by random legal actions, each a command to the engine."""

    async def send(body: Any) -> None:
        request = CommandRequest(command_id=f"c{rng.getrandbits(64)}", game_id=game_id, body=body)
        reply = await engine.answer(msgspec.json.encode(request))
        assert reply.ok, reply

    await send(CreateGameRequest(rules={"preset": "partnership", "max_hands": 1}, league="east"))
    for name in ("ann", "bob", "cy", "di"):
        await send(TakeSeatRequest(player=name))
    while (game := (await engine.games.get(game_id)).state) and game.status != "finished":
        seat, legal = rng.choice(
            [(s, a) for s in range(game.rules.players) for a in legal_actions(game, s)]
        )
        action: PlayerAction
        if isinstance(legal, (PassDue, DiscardDue)):
            hand = game.hand
            assert hand is not None
            action = legal.choose(tuple(rng.sample(cards_held(hand, seat), legal.count)))
        else:
            action = legal
        await send(ActRequest(seat=seat, action=to_api(action)))


async def test_a_game_played_through_the_engine(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    stream = GameStream(js)
    await play_through_engine(Engine(stream), "engine-game", random.Random(3))
    stored = await stream.read("engine-game")
    log = GameLog("engine-game", [s.commit for s in stored], [s.data for s in stored])
    async with workers(store, nats_client):
        await wait_for_position(store, stored[-1].sequence)
    await check_against_domain(store, log, league="east")
    games, _ = await queries.list_games(store.engine, league="east", status="finished")
    assert [game["game_id"] for game in games] == ["engine-game"]


async def test_player_statistics_add_up(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    """Over random games: a game per seat, every hand counted once as one bid's outcome."""
    rng = random.Random(8)
    names = ["ann", "bob", "cy", "di"]
    logs = [
        play_game(rng, f"p{n}", preset=preset, max_hands=3, players=names[: 3 if n == 3 else 4])
        for n, preset in enumerate(["partnership", "solo", "partnership", "cutthroat"])
    ]
    last = await append_games(js, logs)
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    for name in names:
        stats = await queries.player_stats(store.engine, name)
        assert stats is not None
        games = [final_state(log.events) for log in logs]
        seated = [game for game in games if name in _names(game)]
        hands = sum(game.hands_played for game in seated)
        outcomes = ("bids_made", "bids_set", "nils_made", "nils_failed")
        assert stats["games"] == len(seated)
        assert stats["hands"] == hands
        assert sum(stats[outcome] for outcome in outcomes) == hands
        assert stats["wins"] == sum(_won(game, name) for game in seated)
    assert await queries.player_stats(store.engine, "nobody") is None


def _names(game: Game) -> list[str]:
    return [player.name for player in game.players if player is not None]


def _won(game: Game, name: str) -> bool:
    units = table_for(game.rules).units
    return any(_names(game)[seat] == name for unit in game.winners for seat in units[unit])


async def test_player_statistics_known_answers(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    """One partnership hand scored from a tally. Bids: seat 1 nil, 2: 4, 3: 2, 0: 3; tricks
    5, 1, 4, 3. Unit 0 (seats 0, 2) bid 7 and took 9: made, 2 bags, and wins. Unit 1: seat 1's
    nil failed (1 trick); seat 3 bid 2 and took 3: made, 1 overtrick and, under
    ``bags_if_partner_made``, the failed nil's trick: 2 bags."""
    writer = GameWriter("known")
    rules = {"preset": "partnership", "max_hands": 1}
    game = writer.commit(decide(None, CreateGame("known", rules, dealer=0)))
    for name in ("ann", "bob", "cy", "di"):
        game = writer.commit(decide(game, TakeSeat(name), deal=SeededDeal(bytes(32))))
    bids: list[tuple[int, Bid]] = [(1, "nil"), (2, 4), (3, 2), (0, 3)]
    for seat, bid in bids:
        game = writer.commit(decide(game, PlaceBid(seat, bid)))
    game = writer.commit(decide(game, RecordTally((5, 1, 4, 3))))
    assert game.status == "finished"
    last = await append_games(js, [writer.log])
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    counters = ("wins", "bids_made", "bids_set", "nils_made", "nils_failed", "bags")
    expected = {
        "ann": (1, 1, 0, 0, 0, 2),
        "bob": (0, 0, 0, 0, 1, 2),
        "cy": (1, 1, 0, 0, 0, 2),
        "di": (0, 1, 0, 0, 0, 2),
    }
    for name, values in expected.items():
        stats = await queries.player_stats(store.engine, name)
        counts = dict(zip(counters, values, strict=True))
        assert stats == {"player": name, "games": 1, "hands": 1, **counts}
