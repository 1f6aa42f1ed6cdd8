"""A game's owner, visibility and seating, and its seats' token issues, through the domain."""

from __future__ import annotations

import msgspec
import pytest

from domain.commands import CreateGame, ReissueSeatToken, TakeSeat
from domain.errors import RuleViolation
from domain.events import GameCreated, SeatTokenReissued
from domain.game import decide, fold
from domain.rules import resolve_rules
from domain.state import Game


def two_player(command: CreateGame | None = None) -> Game:
    created = fold(decide(None, command or CreateGame("t", {"preset": "two-player"})))
    game = fold(decide(created, TakeSeat("ann")), created)
    assert game is not None
    return game


def test_a_seat_token_issued_again_records_its_issue_and_the_substitute() -> None:
    game = two_player(
        CreateGame(
            "t", {"preset": "two-player"}, platform="acme", visibility="private", seating="open"
        )
    )
    assert (game.platform, game.visibility, game.seating) == ("acme", "private", "open")
    assert game.players[0] is not None
    assert game.players[0].issue == 1
    (again,) = decide(game, ReissueSeatToken(0, "sub"))
    assert again == SeatTokenReissued(0, 2, "sub")
    after = fold([again], game)
    assert after is not None
    assert after.players[0] is not None
    assert (after.players[0].name, after.players[0].issue) == ("sub", 2)
    assert decide(after, ReissueSeatToken(0)) == [SeatTokenReissued(0, 3, "sub")]


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (ReissueSeatToken(1), "wrong_phase"),
        (ReissueSeatToken(5), "malformed"),
        (ReissueSeatToken(0, ""), "malformed"),
        (ReissueSeatToken(0, "a\nb"), "malformed"),
    ],
)
def test_a_token_is_issued_again_only_for_a_taken_seat_and_a_fair_name(
    command: ReissueSeatToken, code: str
) -> None:
    with pytest.raises(RuleViolation) as refused:
        decide(two_player(), command)
    assert refused.value.code == code


@pytest.mark.parametrize(
    "options", [{"visibility": "secret"}, {"seating": "anyone"}, {"platform": "p" * 65}]
)
def test_an_owner_is_a_fair_name_and_access_a_known_word(options: dict[str, str]) -> None:
    with pytest.raises(RuleViolation) as refused:
        decide(None, CreateGame("t", {"preset": "solo"}, **options))  # type: ignore[arg-type]
    assert refused.value.code == "malformed"


def test_a_game_of_before_platforms_reads_as_public_and_anyones() -> None:
    rules = msgspec.json.encode(resolve_rules({"preset": "solo"}))
    old = msgspec.json.decode(
        b'{"type":"game_created","game_id":"old","rules":' + rules + b',"dealer":null}',
        type=GameCreated,
    )
    game = fold([old])
    assert game is not None
    assert (game.platform, game.visibility, game.seating) == (None, "public", "platform")
