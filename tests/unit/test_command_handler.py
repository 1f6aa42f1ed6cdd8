"""The command handler's idempotency and conflict loop (services/engine/handler.py), on the
in-memory event store: the game engine as it runs, without a server. The same paths against
JetStream are in tests/integration/test_engine.py; the store's own contract, which makes these
results carry over, is tests/integration/test_event_store_contract.py."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest
from nats.aio.client import Client

from contracts.wire import (
    MAX_COMMAND_BYTES,
    ActRequest,
    CommandReply,
    CommandRequest,
    CreateGameRequest,
    CreateLeagueRequest,
    LeagueCommandRequest,
    RequestBody,
    ScheduleRoundRequest,
    TakeSeatRequest,
)
from domain.commands import to_api
from domain.events import HandDealt
from domain.game import DiscardDue, PassDue, legal_actions, seat_to_act
from domain.league import RoundCompleted, RoundScheduled
from domain.shuffle import commitment
from domain.state import cards_held
from services.engine.engine import Engine
from services.engine.handler import MAX_ATTEMPTS, commit_time, commit_time_at
from services.engine.league_engine import LeagueEngine
from services.engine.round_watch import RoundWatch
from services.runtime.checkpoints import Checkpoints
from services.runtime.event_store import AppendConflict, Stored
from services.runtime.game_cache import GameCache
from services.runtime.game_stream import GAMES
from services.runtime.league_stream import LEAGUES
from services.runtime.memory_store import MemoryEventStore

CREATE = CreateGameRequest(rules={"preset": "partnership"})
LEAGUE = CreateLeagueRequest(
    name="North", rules={"preset": "partnership", "max_hands": 1}, players=list("abcdefgh")
)


def _request(command_id: str, game: str, body: RequestBody) -> bytes:
    return msgspec.json.encode(CommandRequest(command_id=command_id, game_id=game, body=body))


def make_engine(store: MemoryEventStore[Any]) -> Engine:
    return Engine(store, clock=lambda: "2026-12-01T12:00:00.000Z", seed=lambda: bytes(range(32)))


async def send(
    engine: Engine, command_id: str, body: RequestBody, game: str = "g1"
) -> CommandReply:
    return await engine.answer(_request(command_id, game, body))


@pytest.fixture
def store() -> MemoryEventStore[Any]:
    return MemoryEventStore(GAMES)


async def test_the_same_command_id_gets_its_first_answer_and_is_committed_once(
    store: MemoryEventStore[Any],
) -> None:
    engine = make_engine(store)
    first = await send(engine, "c1", CREATE)
    seated = await send(engine, "c2", TakeSeatRequest(player="ann"))
    assert first.ok
    assert seated.ok
    assert seated.seat is not None
    appends = store.appends

    assert await send(engine, "c1", CREATE) == first
    assert await send(engine, "c2", TakeSeatRequest(player="ann")) == seated
    assert store.appends == appends  # answered from the history, nothing appended
    assert [s.commit.command_id for s in await store.read("g1")] == ["c1", "c2"]


async def test_the_first_answer_outlives_the_process_that_gave_it(
    store: MemoryEventStore[Any],
) -> None:
    first = await send(make_engine(store), "c1", CREATE)
    assert await send(make_engine(store), "c1", CREATE) == first
    assert len(await store.read("g1")) == 1


async def test_a_command_id_used_again_with_another_request_is_refused_unrecorded(
    store: MemoryEventStore[Any],
) -> None:
    engine = make_engine(store)
    await send(engine, "c1", CREATE)
    await send(engine, "c2", TakeSeatRequest(player="ann"))
    again = await send(engine, "c2", TakeSeatRequest(player="bob"))
    assert (again.ok, again.code) == (False, "idempotency_key_reused")
    assert len(await store.read("g1")) == 2


async def test_a_refusal_is_recorded_and_a_retry_gets_it_again(
    store: MemoryEventStore[Any],
) -> None:
    engine = make_engine(store)
    created = await send(engine, "c1", CREATE)
    bid = ActRequest(seat=0, action={"type": "bid", "bid": 3})
    refused = await send(engine, "c2", bid)
    assert not refused.ok
    assert refused.code is not None
    [_, stored] = await store.read("g1")
    assert stored.commit.refusal is not None
    assert (stored.commit.refusal.code, stored.commit.events) == (refused.code, [])
    assert stored.commit.version == created.version  # a refusal moves no version
    appends = store.appends

    assert await send(make_engine(store), "c2", bid) == refused
    assert store.appends == appends


async def test_a_refusal_with_no_history_to_hold_it_is_not_recorded(
    store: MemoryEventStore[Any],
) -> None:
    reply = await send(make_engine(store), "c1", TakeSeatRequest(player="ann"), game="nowhere")
    assert (reply.ok, reply.code) == (False, "game_not_found")
    assert store.appends == 0


async def test_a_seed_is_drawn_for_each_deal_and_for_nothing_else(
    store: MemoryEventStore[Any],
) -> None:
    drawn: list[bytes] = []

    def seed() -> bytes:
        drawn.append(bytes([len(drawn)]) * 32)
        return drawn[-1]

    engine = Engine(store, clock=lambda: "2026-12-01T12:00:00.000Z", seed=seed)
    await send(engine, "c1", CREATE)
    for n, player in enumerate(["ann", "bob", "cy"]):
        assert (await send(engine, f"s{n}", TakeSeatRequest(player=player))).ok
    assert drawn == []  # no command so far could deal
    assert (await send(engine, "s3", TakeSeatRequest(player="dee"))).ok
    [dealt] = [e for s in await store.read("g1") for e in s.commit.events if type(e) is HandDealt]
    bid = ActRequest(seat=(dealt.dealer + 1) % 4, action={"type": "bid", "bid": 3})
    assert (await send(engine, "b1", bid)).ok
    assert len(drawn) == 1  # the last seat's deal drew one seed, the bid none
    assert (dealt.seed, dealt.commitment) == (drawn[0].hex(), commitment(drawn[0]))


async def play_out(engine: Engine, game: str, seed: int) -> None:
    """Random legal actions until the game ends, each as a seat's command."""
    rng = random.Random(seed)
    for n in range(10_000):
        state = (await engine.games.get(game)).state
        assert state is not None
        if state.status == "finished":
            return
        seat = seat_to_act(state)
        assert seat is not None
        assert state.hand is not None
        action: Any = rng.choice(legal_actions(state, seat))
        if isinstance(action, (PassDue, DiscardDue)):
            action = action.choose(tuple(rng.sample(cards_held(state.hand, seat), action.count)))
        reply = await send(engine, f"a{n}", ActRequest(seat=seat, action=to_api(action)), game)
        assert reply.ok, reply
    raise AssertionError("the game did not end")


QUICK = {"preset": "two-player", "max_hands": 1}


async def test_an_engine_tells_of_each_game_it_ends_once_and_of_nothing_else(
    store: MemoryEventStore[Any],
) -> None:
    ended: list[str] = []
    engine = make_engine(store)
    engine.ended = ended.append
    await send(engine, "c1", CreateGameRequest(rules=QUICK))
    for n, player in enumerate(["ann", "bob"]):
        await send(engine, f"s{n}", TakeSeatRequest(player=player))
    assert ended == []
    await play_out(engine, "g1", seed=3)
    assert ended == ["g1"]
    again = await send(engine, "late", ActRequest(seat=0, action={"type": "bid", "bid": 3}))
    assert not again.ok
    assert ended == ["g1"]


async def test_the_engine_that_ends_a_rounds_last_table_finishes_the_round_itself(
    store: MemoryEventStore[Any],
) -> None:
    """The round watch's follower never runs here: the round is finished in process."""
    leagues = MemoryEventStore(LEAGUES)
    engine = make_engine(store)
    league_engine = LeagueEngine(leagues, engine.games, seed=lambda: bytes(32))
    watch = RoundWatch(league_engine, Checkpoints(Client().jetstream(), "round-watch"))
    engine.ended = watch.ended
    create = CreateLeagueRequest(name="North", rules=QUICK, players=["ann", "bob", "cat", "dan"])
    for command_id, body in (("c1", create), ("c2", ScheduleRoundRequest())):
        request = LeagueCommandRequest(command_id=command_id, league_id="north", body=body)
        assert (await league_engine.answer(msgspec.json.encode(request))).ok
    [*_, scheduled] = [e for s in await leagues.read("north") for e in s.commit.events]
    assert isinstance(scheduled, RoundScheduled)
    for seed, table in enumerate(scheduled.tables):
        create_game = CreateGameRequest(rules=QUICK, league="north")
        assert (await send(engine, "c1", create_game, table.game_id)).ok
        for seat, player in enumerate(table.players):
            take = TakeSeatRequest(player=player, seat=seat)
            assert (await send(engine, f"s{seat}", take, table.game_id)).ok
        await play_out(engine, table.game_id, seed)
        await asyncio.sleep(0.05)  # the watch's task for this end runs (nothing else waits here)
    [*_, completed] = stored = await leagues.read("north")
    assert len(stored) == 3  # created, scheduled, completed: the first table's end added nothing
    assert [type(event) for event in completed.commit.events] == [RoundCompleted]
    assert completed.commit.command_id == f"round-end-{scheduled.tables[-1].game_id}"
    assert watch.finished_rounds == 1


async def test_a_conflict_reloads_and_decides_again(store: MemoryEventStore[Any]) -> None:
    one, other = make_engine(store), make_engine(store)
    await send(one, "c1", CREATE)
    taken = await send(other, "c2", TakeSeatRequest(player="ann"))  # one's copy is now stale

    reply = await send(one, "c3", TakeSeatRequest(player="bob"))
    assert reply.ok
    assert one.conflicts == 1
    assert reply.seat is not None
    assert reply.seat != taken.seat
    commits = [s.commit for s in await store.read("g1")]
    assert [c.command_id for c in commits] == ["c1", "c2", "c3"]
    versions = [c.first_version for c in commits[1:]]
    assert versions == [commits[0].version + 1, commits[1].version + 1]  # no gap, no overlap


async def test_a_conflict_that_decides_again_can_end_in_a_recorded_refusal(
    store: MemoryEventStore[Any],
) -> None:
    one, other = make_engine(store), make_engine(store)
    await send(one, "c1", CREATE)
    await send(other, "c2", TakeSeatRequest(player="ann", seat=0))
    reply = await send(one, "c3", TakeSeatRequest(player="bob", seat=0))
    assert not reply.ok
    assert one.conflicts == 1
    last = (await store.read("g1"))[-1].commit
    assert last.command_id == "c3"
    assert last.refusal is not None
    assert last.refusal.code == reply.code


async def test_a_command_another_process_committed_meanwhile_gets_that_answer(
    store: MemoryEventStore[Any],
) -> None:
    one, other = make_engine(store), make_engine(store)
    await send(one, "c1", CREATE)
    theirs = await send(other, "c2", TakeSeatRequest(player="ann"))
    ours = await send(one, "c2", TakeSeatRequest(player="ann"))  # the retry reached `one`
    assert ours == theirs
    assert one.conflicts == 1
    assert [s.commit.command_id for s in await store.read("g1")] == ["c1", "c2"]


class Counted(MemoryEventStore[Any]):
    """A store that counts the reads of a history (each a round trip on JetStream)."""

    def __init__(self) -> None:
        super().__init__(GAMES)
        self.reads = 0

    async def read(
        self, key: str, after: int = 0, *, limit: int | None = None, until: int | None = None
    ) -> list[Stored[Any]]:
        self.reads += 1
        return await super().read(key, after, limit=limit, until=until)


async def test_a_game_another_process_created_is_found_though_it_was_missing_here() -> None:
    """A refusal with no history to record it is not checked by an append: it is given on a
    state read from the stream for the command, not on the one held since the last."""
    store = Counted()
    one, other = make_engine(store), make_engine(store)
    missing = await send(one, "c1", TakeSeatRequest(player="ann"))
    assert (missing.ok, missing.code) == (False, "game_not_found")
    assert store.reads == 1  # the game was loaded for this command: not read again

    await send(other, "c2", CREATE)
    seated = await send(one, "c3", TakeSeatRequest(player="ann"))
    assert seated.ok
    assert one.conflicts == 0
    assert [s.commit.command_id for s in await store.read("g1")] == ["c2", "c3"]


async def test_a_refusal_not_recorded_reads_the_stream_once_and_then_stands() -> None:
    store = Counted()
    engine = make_engine(store)
    await send(engine, "c1", TakeSeatRequest(player="ann"))
    reads = store.reads

    again = await send(engine, "c2", TakeSeatRequest(player="ann"))
    assert (again.ok, again.code) == (False, "game_not_found")
    assert store.reads == reads + 1
    assert store.appends == 0


async def test_an_accepted_command_reads_nothing() -> None:
    store = Counted()
    engine = make_engine(store)
    await send(engine, "c1", CREATE)
    reads = store.reads
    assert (await send(engine, "c2", TakeSeatRequest(player="ann"))).ok
    assert store.reads == reads


class AlwaysBehind(MemoryEventStore[Any]):
    """A store on which another writer always got there first."""

    async def append(self, key: str, data: bytes, *, expected: int, command_id: str) -> int:
        if self.appends >= 1:  # the game's creation goes through
            self.appends += 1
            raise AppendConflict("another commit got there first")
        return await super().append(key, data, expected=expected, command_id=command_id)


async def test_endless_conflicts_end_in_unavailable_after_a_bounded_number_of_tries() -> None:
    store = AlwaysBehind(GAMES)
    engine = make_engine(store)
    await send(engine, "c1", CREATE)
    reply = await send(engine, "c2", TakeSeatRequest(player="ann"))
    assert (reply.ok, reply.code) == (False, "unavailable")
    assert engine.conflicts == MAX_ATTEMPTS
    assert len(await store.read("g1")) == 1


# --------------------------------------------------------------------------- reading requests


@pytest.mark.parametrize(
    ("message", "detail"),
    [
        (b"x" * (MAX_COMMAND_BYTES + 1), f"a command is at most {MAX_COMMAND_BYTES} bytes"),
        (b"{not json", "not a command request"),
        (b'{"command_id": "c1"}', "not a command request"),
        (_request("c1", "no spaces", CREATE), "a game id is 1 to 64 of A-Z a-z 0-9 _ -"),
        (_request("c 1", "g1", CREATE), "a command id is 1 to 128 of A-Z a-z 0-9 _ = -"),
    ],
)
async def test_an_unreadable_game_request_is_refused_malformed_and_nothing_is_stored(
    store: MemoryEventStore[Any], message: bytes, detail: str
) -> None:
    reply = await make_engine(store).answer(message)
    assert (reply.ok, reply.code) == (False, "malformed")
    assert reply.detail.startswith(detail)
    assert store.appends == 0


@pytest.mark.parametrize(
    ("message", "detail"),
    [
        (b"[]", "not a league command request"),
        (
            msgspec.json.encode(
                LeagueCommandRequest(command_id="c1", league_id="x" * 41, body=LEAGUE)
            ),
            "a league id is 1 to 40 of A-Z a-z 0-9 _ -",
        ),
    ],
)
async def test_an_unreadable_league_request_is_refused_malformed(
    message: bytes, detail: str
) -> None:
    leagues = MemoryEventStore(LEAGUES)
    engine = LeagueEngine(leagues, GameCache(MemoryEventStore(GAMES)))
    reply = await engine.answer(message)
    assert (reply.ok, reply.code) == (False, "malformed")
    assert reply.detail.startswith(detail)
    assert leagues.appends == 0


async def test_a_league_command_runs_through_the_same_path() -> None:
    leagues = MemoryEventStore(LEAGUES)
    engine = LeagueEngine(leagues, GameCache(MemoryEventStore(GAMES)), seed=lambda: bytes(32))
    request = LeagueCommandRequest(command_id="c1", league_id="north", body=LEAGUE)
    created = await engine.answer(msgspec.json.encode(request))
    assert created.ok
    assert await engine.answer(msgspec.json.encode(request)) == created
    assert leagues.appends == 1
    missing = LeagueCommandRequest(command_id="c2", league_id="south", body=ScheduleRoundRequest())
    reply = await engine.answer(msgspec.json.encode(missing))
    assert (reply.ok, reply.code) == (False, "league_not_found")
    assert leagues.appends == 1


class Unreachable(MemoryEventStore[Any]):
    """A store whose server does not answer."""

    async def read(
        self, key: str, after: int = 0, *, limit: int | None = None, until: int | None = None
    ) -> list[Stored[Any]]:
        raise TimeoutError("no answer")


async def test_an_unreachable_store_is_answered_unavailable() -> None:
    engine = make_engine(Unreachable(GAMES))
    reply = await send(engine, "c1", CREATE)
    assert (reply.ok, reply.code) == (False, "unavailable")
    assert engine.games.peek("g1") is None  # forgotten: the next command loads it again


@pytest.mark.parametrize(
    "nanoseconds",
    [
        *(0, 999_999_999, 1_000_000_000, 1_764_590_400_000_000_000, 1_764_590_399_999_999_999),
        *random.Random(7).sample(range(4_102_444_800 * 10**9), 50),
    ],
)
def test_a_commit_time_is_the_iso_utc_time_to_the_millisecond(nanoseconds: int) -> None:
    instant = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=nanoseconds // 1000)
    expected = instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert commit_time_at(nanoseconds) == commit_time_at(nanoseconds) == expected


def test_the_commit_time_is_now() -> None:
    def reckoned() -> str:
        return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    for _ in range(2000):
        before, now, after = reckoned(), commit_time(), reckoned()
        assert before <= now <= after
