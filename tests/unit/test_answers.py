"""The gateway's hot routes answer with JSON that msgspec encodes straight from the domain's
structs (:class:`services.gateway.views.Answer`), skipping FastAPI's pydantic pass; their schemas
are the structs' own. Here, for random games of every preset, at every step and for every
reader, a state, a view or a page of events decodes strictly as the struct it was encoded from,
and shows each event as that reader may see it."""

from __future__ import annotations

import json
import random
from typing import Any

import msgspec
import pytest
from starlette.responses import Response

from benchmarks.engine import new_game
from contracts.answers import EventPage
from contracts.wire import EventRecord
from domain.game import DiscardDue, PassDue, decide, evolve, legal_actions, seat_to_act
from domain.rules import PRESETS
from domain.shuffle import SeededDeal
from domain.state import Game, cards_held
from domain.views import PublicState, SeatView, event_for
from services.gateway.views import (
    Answer,
    events_answer,
    state_answer,
    state_for,
)


def answered(value: Any) -> Any:
    return json.loads(bytes(value.body))


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_views_and_events_answer_what_the_response_models_would(preset: str) -> None:
    rng = random.Random(preset)
    game: Game = new_game(preset, rng)
    deal = SeededDeal(rng.randbytes(32))
    seats = range(game.rules.players)
    for _ in range(120):
        for reader in (None, *seats):
            shape = PublicState if reader is None else SeatView
            body = bytes(state_answer(game, reader).body)
            assert msgspec.json.decode(body, type=shape, strict=True) == state_for(game, reader)
        seat = seat_to_act(game)
        if seat is None:
            break
        action: Any = rng.choice(legal_actions(game, seat))
        if isinstance(action, PassDue | DiscardDue):
            assert game.hand is not None
            action = action.choose(tuple(rng.sample(cards_held(game.hand, seat), action.count)))
        events = decide(game, action, deal=deal)
        numbered = [(game.version + 1 + offset, event) for offset, event in enumerate(events)]
        for event in events:
            game = evolve(game, event)
        for reader in (None, *seats):
            body = bytes(events_answer(game.version, numbered, reader).body)
            page = msgspec.json.decode(body, type=EventPage, strict=True)
            seen = [EventRecord(number, event_for(event, reader)) for number, event in numbered]
            assert page == EventPage(game.version, seen)


@pytest.mark.parametrize("status", [200, 201, 202, 204, 304, 101])
def test_an_answer_has_the_headers_starlette_gives_its_body(status: int) -> None:
    answer = Answer({"version": 3, "events": []}, status)
    plain = Response(answer.body, status_code=status, media_type="application/json")
    assert answer.raw_headers == plain.raw_headers
    assert answer.body == plain.body
    assert answer.status_code == status


def test_a_view_shows_its_rules_as_they_are_and_shares_them_between_views() -> None:
    game = new_game("partnership", random.Random(7))
    assert answered(state_answer(game, None))["rules"] == game.rules.to_json()
    assert state_for(game, 0).rules is state_for(game, 1).rules is game.rules
