"""Which webhooks a game's and a league's commits make: every seat that comes to act is told,
once; every scored hand and the end are told with the scoreboard's figures; no card is ever in
a payload; league rounds are told without seat tokens."""

from __future__ import annotations

import re
from typing import Any

import msgspec
import pytest

from contracts.webhooks import EVENT_TYPES, encode_webhook, read_webhook, type_of
from contracts.wire import Commit, LeagueCommit
from domain.events import BidPlaced, CardDrawn, CardPlayed, CardsDiscarded, CardsPassed
from domain.league import CreateLeague, ScheduleRound, decide, fold
from domain.state import Game
from services.webhooks.events import (
    Made,
    Seen,
    game_webhooks,
    league_webhooks,
)
from tests.unit.test_audit_games import PRESETS, HonestTable

CARD = re.compile(r"^(?:10|[2-9TJQKA])[CDHS]$|^[BL]J$")


def made_by(table: HonestTable) -> list[Made]:
    """Every webhook of the table's commits."""
    seen: Seen | None = None
    made: list[Made] = []
    for stored in table.commits:
        seen, more = game_webhooks(seen, stored.commit)
        made += more
    return made


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in strings_in(item)]
    if isinstance(value, list):
        return [s for item in value for s in strings_in(item)]
    return []


@pytest.mark.parametrize("preset", PRESETS)
def test_a_whole_game_makes_its_creation_each_turn_each_scored_hand_and_its_end(
    preset: str,
) -> None:
    table = HonestTable({"preset": preset, "max_hands": 2}, seed=3, game_id="g1").play()
    final = table.state
    assert isinstance(final, Game)
    made = made_by(table)
    kinds = [type_of(m.webhook) for m in made]

    assert kinds[0] == "game.created"
    assert kinds[-1] == "game.finished"
    assert kinds.count("game.created") == kinds.count("game.finished") == 1
    assert kinds.count("hand.scored") == final.hands_played
    assert set(kinds) <= set(EVENT_TYPES)
    assert {m.chain for m in made} == {"game:g1"}
    finished = msgspec.to_builtins(made[-1].webhook)["data"]
    assert finished["scores"] == list(final.scores)
    assert finished["winners"] == list(final.winners)
    assert finished["players"] == [p.name if p else None for p in final.players]
    scored = [msgspec.to_builtins(m.webhook)["data"] for m in made if m.chain and
              type_of(m.webhook) == "hand.scored"]  # fmt: skip
    assert scored[-1]["scores"] == list(final.scores)
    assert [line["hand"] for line in scored] == list(range(1, final.hands_played + 1))


def mover(commit: Commit) -> int | None:
    """The seat whose move a commit records (a bid, a card, a draw, a discard, a pass), or None (a
    creation, a seat taken, a look: nothing a turn asked for)."""
    for event in commit.events:
        if isinstance(event, BidPlaced | CardPlayed | CardDrawn | CardsDiscarded | CardsPassed):
            return event.seat
    return None


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("seed", [1, 2])
def test_each_move_was_asked_for_by_one_turn_told_to_its_seat_since_its_last_move(
    preset: str, seed: int
) -> None:
    """Told turns and moves pair up: every move of a seat was preceded by a turn told to that
    seat after its previous move, with the version of the game at that moment or before, and
    no turn is told that no move answers (the game ends with nobody to act)."""
    table = HonestTable({"preset": preset, "max_hands": 2}, seed=seed).play(refusals=0.1)
    seen: Seen | None = None
    waiting: dict[int, list[dict[str, Any]]] = {}
    moves = 0
    for stored in table.commits:
        commit = stored.commit
        seat = mover(commit)
        if seat is not None:
            told = waiting.pop(seat, [])
            assert len(told) == 1, f"move at version {commit.version} of seat {seat}: {told}"
            assert told[0]["version"] <= commit.version - len(commit.events)
            moves += 1
        seen, made = game_webhooks(seen, commit)
        for one in made:
            if type_of(one.webhook) == "game.turn":
                data = msgspec.to_builtins(one.webhook)["data"]
                assert data["version"] == commit.version
                assert data["player"] == f"player {data['seat']}"
                assert data["deadline"] is None, "no game has a clock yet"
                waiting.setdefault(data["seat"], []).append(data)
    assert moves > 20
    assert waiting == {}, "a turn told that no move answered"


@pytest.mark.parametrize("preset", PRESETS)
def test_no_payload_holds_a_card(preset: str) -> None:
    table = HonestTable({"preset": preset, "max_hands": 3}, seed=11).play()
    made = made_by(table)
    for one in made:
        body = encode_webhook(one.webhook)
        assert read_webhook(body) == one.webhook
        decoded = msgspec.json.decode(body)
        # The rules are public, and may name cards taken out of the deck (``deck_remove``).
        shown = {key: value for key, value in decoded["data"].items() if key != "rules"}
        cards = [s for s in strings_in(shown) if CARD.match(s)]
        assert not cards, f"{type_of(one.webhook)} shows {cards}"
        assert not {"hands", "deck", "seed", "cards", "hand_cards"} & set(decoded["data"])


def test_a_refused_command_makes_nothing() -> None:
    table = HonestTable({"preset": "two-player"}, seed=5)
    table.send(table.refused_action())
    refused = table.commits[-1]
    assert refused.commit.refusal is not None
    seen, _ = game_webhooks(None, table.commits[0].commit)
    for stored in table.commits[1:-1]:
        seen, _ = game_webhooks(seen, stored.commit)
    _, made = game_webhooks(seen, refused.commit)
    assert made == []


def test_a_league_round_is_told_with_its_tables_and_byes_and_never_a_token() -> None:
    created = decide(
        None,
        CreateLeague("north", "North", {"preset": "two-player"}, ("ann", "bob", "cy")),
        seed="00",
    )
    league = fold(created)
    assert league is not None
    scheduled = decide(league, ScheduleRound(1))
    commits = [
        LeagueCommit(
            league_id="north", version=1, command_id="c1", time="t1", previous="", events=created
        ),
        LeagueCommit(
            league_id="north", version=2, command_id="c2", time="t2", previous="", events=scheduled
        ),
    ]
    state, first = league_webhooks(None, commits[0])
    _, second = league_webhooks(state, commits[1])
    assert first == []
    [started] = second
    assert started.chain == "league:north"
    assert type_of(started.webhook) == "league.round_started"
    data = msgspec.to_builtins(started.webhook)["data"]
    assert data["round"] == 1
    assert data["tables"] == [
        {"table": 1, "game_id": "north-1-1", "players": data["tables"][0]["players"]}
    ]
    assert len(data["byes"]) == 1
    assert "token" not in encode_webhook(started.webhook).decode()
