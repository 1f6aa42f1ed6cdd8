"""The gateway's hot routes answer with JSON that msgspec encodes straight from the domain's
structs (:class:`services.gateway.views.Answer`), skipping FastAPI's pydantic pass. The table's
state and a seat's view have no pydantic model at all (their schema is the domain struct's);
the events' records do, and that pass would have given exactly the same JSON: here, for random
games of every preset, at every step and for every reader, the answer equals the pydantic
response model's own dump of it, and a state or view decodes strictly as the struct it was
encoded from."""

from __future__ import annotations

import json
import random
from typing import Any

import msgspec
import pytest
from pydantic import BaseModel
from starlette.responses import Response

from benchmarks.engine import new_game
from domain.game import DiscardDue, PassDue, decide, evolve, legal_actions, seat_to_act
from domain.rules import PRESETS
from domain.shuffle import SeededDeal
from domain.state import Game, cards_held
from domain.views import PublicState, SeatView
from services.gateway import models
from services.gateway.views import (
    Answer,
    event_records,
    events_answer,
    state_answer,
    state_for,
)


def pydantic_json(model: type[BaseModel], value: Any) -> Any:
    """What FastAPI sends for ``value`` under ``response_model=model``."""
    return json.loads(model.model_validate(value).model_dump_json(by_alias=True))


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
            records = {"version": game.version, "events": event_records(numbered, reader)}
            expected = pydantic_json(models.Events, records)
            assert answered(events_answer(game.version, numbered, reader)) == expected


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
