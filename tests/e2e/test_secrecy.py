"""Across random games, nobody is shown a card they could not see at the table: not in a public
state, a seat's view, an action's answer, a page of events (public or a seat's), nor a
server-sent event. Checked against the deals the hand records reveal afterwards."""

from __future__ import annotations

import asyncio
import random
from contextlib import aclosing
from typing import Any

import msgspec
import pytest

from services.client import HandRecord, SpadesClient
from tests.e2e.players import Style, seat_players
from tests.e2e.secrecy import (
    PUBLIC,
    RecordingTransport,
    Sighting,
    Sightings,
    Timeline,
    cards_shown,
)
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e

STREAM_END_TIMEOUT_S = 30.0

GAMES: dict[str, tuple[dict[str, Any], Style]] = {
    # blind nil at any score, so that blind nil passes happen and cards change hands
    "partnership with blind nil passes": (
        {"preset": "partnership", "blind_nil_behind": None, "target": 150, "max_hands": 2},
        Style(look_first=0.3, blind_nil=0.5),
    ),
    "two-player draw": ({"preset": "two-player", "max_hands": 1}, Style()),
    "cutthroat": ({"preset": "cutthroat", "max_hands": 1}, Style(look_early=0.6)),
    "solo with jokers": (
        {
            "preset": "solo",
            "jokers": True,
            "trump_order": "jokers",
            "deck_remove": ["2C", "2D"],
            "max_hands": 1,
        },
        Style(look_first=0.8),
    ),
    # two copies of every card: a seat may hold a card another seat also holds
    "six-player": ({"preset": "six-player", "max_hands": 1}, Style(look_early=0.5)),
    # the dealer's discard, face down; a first hand where every seat picks its cards up at once
    "jokers-54, the first hand without bidding": (
        {"preset": "jokers-54", "first_hand": "no_bid", "blind_bids": 6, "max_hands": 2},
        Style(look_first=0.3),
    ),
}


async def follow(
    client: SpadesClient, game_id: str, token: str | None, reader: int | None, seen: Sightings
) -> list[int]:
    """Keep every server-sent message of one reader until the game ends; return the event ids."""
    ids: list[int] = []
    async with aclosing(client.stream(game_id, token)) as stream:
        async for message in stream:
            data = message.json()
            seen.add_server_sent(reader, message.event, message.id, data)
            if message.event == "state":
                if data["status"] == "finished":
                    return ids
                continue
            if message.event in ("clock", "receipt"):  # seen, but no event: the id repeats
                continue
            ids.append(int(message.id or 0))
            event = data.get("event", data)
            if event.get("type") == "game_ended":
                return ids
    raise AssertionError(f"the stream of {reader} ended before the game")


async def every_event(client: SpadesClient, game_id: str, token: str | None) -> list[Any]:
    """All of a reader's events, page by page, as the server wrote them."""
    records: list[Any] = []
    after = 0
    while True:
        page = await client.events(game_id, token, after=after, limit=50)
        if not page:
            return records
        records.extend(msgspec.to_builtins(page))
        after = page[-1].version


@pytest.mark.parametrize("name", sorted(GAMES))
async def test_no_reader_is_shown_a_card_it_could_not_see(stack: Stack, name: str) -> None:
    rules, style = GAMES[name]
    rng = random.Random(f"secrecy {name}")
    seen = Sightings(platform_keys={stack.api_key} if stack.api_key else set())
    transport = RecordingTransport(seen)
    async with SpadesClient(stack.base_url, api_key=stack.api_key, transport=transport) as client:
        table = await seat_players(client, rules, rng, style=style)
        game_id = table.game_id
        for seat in table.seats:
            seen.seat_of_token[seat.token] = seat.seat
        readers: list[tuple[int | None, str | None]] = [(PUBLIC, None)]
        readers += [(seat.seat, seat.token) for seat in table.seats]
        streams = [
            asyncio.create_task(follow(client, game_id, token, reader, seen))
            for reader, token in readers
        ]
        while await table.step():
            await client.state(game_id)
            reader, token = rng.choice(readers)
            last = table.moves[-1].version
            await client.events(game_id, token, after=rng.randrange(max(1, last)))
        ids_per_reader = await asyncio.wait_for(
            asyncio.gather(*streams), timeout=STREAM_END_TIMEOUT_S
        )
        public_events = await every_event(client, game_id, None)
        for reader, token in readers[1:]:
            seen.add_events(reader, "all events", await every_event(client, game_id, token))
        seen.add_events(PUBLIC, "all events", public_events)
        records = await client.hands(game_id, min_version=public_events[-1]["version"])

    timeline = Timeline(public_events, records)
    leaks = list(timeline.leaks(seen.seen))
    assert not leaks, "\n".join(leaks[:5])

    # The check looked at real answers: every seat was shown its own cards, and every stream
    # carried the game to its end.
    final_version = public_events[-1]["version"]
    for seat in table.seats:
        dealt = {card.value for card in records[0].deal.hands[seat.seat]}
        shown = set().union(*(cards_shown(s.document) for s in seen.seen if s.reader == seat.seat))
        assert dealt & shown, f"seat {seat.seat} was never shown one of its cards"
    for ids in ids_per_reader:
        assert ids == list(range(ids[0], final_version + 1)), "every event, once, in order"
    if rules.get("blind_nil_behind", 100) is None:
        assert any(record.passes for record in records), "cards changed hands"


# --------------------------------------------------------------------------- the check itself


def _timeline() -> Timeline:
    """A made-up two-seat hand: seat 0 holds AS and 2H, seat 1 KS and 3H; seat 0 looks at
    version 3, seat 1 bids at 4, AS is played at 5, the hand is scored at 9."""
    record = {
        "hand": 1,
        "dealer": 1,
        "deal": {
            "deck": ["AS", "KS", "2H", "3H"],
            "hands": [["AS", "2H"], ["KS", "3H"]],
            "seed": "5eed" * 16,
            "commitment": "c0" * 32,
        },
        "draws": [],
        "bids": [1, 1],
        "passes": [],
        "tricks": [
            {
                "leader": 0,
                "cards": [{"seat": 0, "card": "AS"}, {"seat": 1, "card": "KS"}],
                "winner": 0,
            },
            {
                "leader": 0,
                "cards": [{"seat": 0, "card": "2H"}, {"seat": 1, "card": "3H"}],
                "winner": 1,
            },
        ],
        "tricks_won": [1, 1],
        "points": [10, 10],
        "scores": [10, 10],
        "bags": [0, 0],
    }
    events = [
        {"version": 2, "event": {"type": "hand_dealt", "hand": 1, "dealer": 1}},
        {"version": 3, "event": {"type": "hand_looked", "seat": 0}},
        {"version": 4, "event": {"type": "bid_placed", "seat": 1, "bid": 1}},
        {"version": 5, "event": {"type": "card_played", "seat": 0, "card": "AS"}},
        {"version": 6, "event": {"type": "card_played", "seat": 1, "card": "KS"}},
        {"version": 7, "event": {"type": "card_played", "seat": 0, "card": "2H"}},
        {"version": 8, "event": {"type": "card_played", "seat": 1, "card": "3H"}},
        {"version": 9, "event": {"type": "hand_scored", "hand": 1, "seed": "5eed" * 16}},
    ]
    return Timeline(events, [msgspec.convert(record, HandRecord)])


@pytest.mark.parametrize(
    ("sighting", "leaks"),
    [
        (Sighting(PUBLIC, 4, "state", {"current_trick": [], "rules": {"deck_remove": ["AS"]}}), 0),
        (Sighting(PUBLIC, 4, "state", {"hand": ["AS"]}), 1),
        (Sighting(PUBLIC, 5, "state", {"current_trick": [{"seat": 0, "card": "AS"}]}), 0),
        (Sighting(0, 2, "view", {"hand": ["AS", "2H"]}), 1),
        (Sighting(0, 3, "view", {"hand": ["AS", "2H"]}), 0),
        (Sighting(0, 3, "view", {"hand": ["AS", "2H"], "extra": {"x": ["3H"]}}), 1),
        (Sighting(1, 3, "events", {"event": {"type": "hand_looked", "cards": ["AS"]}}), 1),
        (Sighting(1, 4, "view", {"hand": ["KS", "3H"]}), 0),
        (Sighting(0, 8, "events", {"event": {"type": "x", "seed": "5eed" * 16}}), 1),
        (Sighting(PUBLIC, 9, "events", {"event": {"type": "hand_scored", "seed": "5eed" * 16}}), 0),
        (Sighting(PUBLIC, 9, "record", {"deal": {"hands": [["AS", "2H"], ["KS", "3H"]]}}), 0),
        (Sighting(PUBLIC, 4, "state", {"discards": ["10H"]}), 1),
    ],
)
def test_the_check_finds_what_a_reader_should_not_see(sighting: Sighting, leaks: int) -> None:
    assert len(list(_timeline().leaks([sighting]))) == leaks
