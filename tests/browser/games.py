"""Games set up and moved on through the HTTP API, synchronously (the browser tests drive
Playwright's sync API, which runs no asyncio loop of the test's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Game:
    game_id: str
    tokens: list[str]
    players: list[str]


def new_game(
    http: httpx.Client,
    rules: dict[str, Any],
    players: list[str],
    clock: dict[str, Any] | None = None,
) -> Game:
    """A game with every seat taken (so its first hand is dealt), on ``clock`` if given."""
    body: dict[str, Any] = {"rules": rules}
    if clock is not None:
        body["clock"] = clock
    created = http.post("/v1/games", json=body, timeout=TIMEOUT_S)
    assert created.status_code == 201, created.text
    game_id = created.json()["game_id"]
    tokens = []
    for seat, player in enumerate(players):
        taken = http.post(
            f"/v1/games/{game_id}/seats", json={"player": player, "seat": seat}, timeout=TIMEOUT_S
        )
        assert taken.status_code == 201, taken.text
        tokens.append(taken.json()["token"])
    return Game(game_id, tokens, players)


def state(http: httpx.Client, game_id: str) -> dict[str, Any]:
    answer = http.get(f"/v1/games/{game_id}", timeout=TIMEOUT_S)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def view(http: httpx.Client, game: Game, seat: int) -> dict[str, Any]:
    answer = http.get(
        f"/v1/games/{game.game_id}/view",
        headers={"Authorization": f"Bearer {game.tokens[seat]}"},
        timeout=TIMEOUT_S,
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def act(http: httpx.Client, game: Game, seat: int, action: dict[str, Any]) -> dict[str, Any]:
    answer = http.post(
        f"/v1/games/{game.game_id}/actions",
        json=action,
        headers={"Authorization": f"Bearer {game.tokens[seat]}"},
        timeout=TIMEOUT_S,
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def first_move(seen: dict[str, Any]) -> dict[str, Any]:
    """The seat's first legal action that is not a look, as it would be posted: the smallest
    numeric bid (nils everywhere would tie games that must end), a pass or a discard of the
    first cards of the hand."""
    numeric = [a for a in seen["legal"] if a["type"] == "bid" and isinstance(a["bid"], int)]
    if numeric:
        return dict(min(numeric, key=lambda action: int(action["bid"])))
    for action in seen["legal"]:
        if action["type"] == "look":
            continue
        if action["type"] in ("pass", "discard"):
            return {"type": action["type"], "cards": seen["hand"][: action["count"]]}
        return dict(action)
    raise AssertionError(f"seat {seen['seat']} has nothing to do: {seen['legal']}")


def seat_to_act(public: dict[str, Any]) -> int:
    """The seat the game waits for (a seat owing a pass when no one is on turn)."""
    if public["turn"] is not None:
        turn: int = public["turn"]
        return turn
    due: list[int] = public["passes_due"]
    return due[0]


def move_on(http: httpx.Client, game: Game, moves: int) -> int:
    """Make ``moves`` moves, each the first legal one of the seat to act; return the version."""
    version = 0
    for _ in range(moves):
        seat = seat_to_act(state(http, game.game_id))
        version = act(http, game, seat, first_move(view(http, game, seat)))["version"]
    return version


def play_out(http: httpx.Client, game: Game) -> int:
    """Play the game to its end with first legal moves; return its last version."""
    version = 0
    while (public := state(http, game.game_id))["status"] == "playing":
        seat = seat_to_act(public)
        version = act(http, game, seat, first_move(view(http, game, seat)))["version"]
    return version
