"""The ``players`` read model: each player's record over every game they sat in.

Counted per player name: ``games`` (seats taken, one per game), ``wins`` (games their unit
won), ``hands`` played, ``bids_made`` and ``bids_set`` (a numeric bid counts as made when the
bidder's unit made its contract), ``nils_made`` and ``nils_failed`` (nil and blind nil alike),
and ``bags`` (the overtricks their unit took in the hands they played). Whether a contract or a
nil was made is read from the domain's own scoring lines (:func:`domain.scoring.score_hand`),
so these counts follow every rule option exactly as the score did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import msgspec

from contracts.wire import Commit
from domain.bids import is_nil
from domain.events import GameCreated, GameEnded, HandScored, SeatTaken
from domain.rules import Rules
from domain.scoring import score_hand
from domain.table import table_for
from services.projections.model import PerGameModel
from services.store.database import Statements, fetch, upsert, where_in
from services.store.schema import player_games, players

CONTRACT_MADE = frozenset({"contract"})
CONTRACT_SET = frozenset({"failed_bid", "renege"})
SPECIAL_CONTRACTS = frozenset({"ten_for_two_hundred", "boston", "blind_boston"})
NILS = frozenset({"nil_value", "blind_nil_value"})
BAGS = frozenset({"overtrick_points", "failed_nil_tricks"})


@dataclass(slots=True)
class Tally:
    """A player's counters (or what one batch adds to them)."""

    games: int = 0
    wins: int = 0
    hands: int = 0
    bids_made: int = 0
    bids_set: int = 0
    nils_made: int = 0
    nils_failed: int = 0
    bags: int = 0

    def add(self, other: Tally) -> None:
        for counter in COUNTERS:
            setattr(self, counter, getattr(self, counter) + getattr(other, counter))


COUNTERS = tuple(counter.name for counter in fields(Tally))


@dataclass(slots=True)
class PlayerGame:
    """What the model keeps of a game: its rules and who sits where."""

    game_id: str
    rules: Rules
    players: list[str | None]
    version: int
    changes: dict[str, Tally] = field(default_factory=dict)
    """What this game added to each player's counters since it was loaded."""

    def tally(self, player: str) -> Tally:
        return self.changes.setdefault(player, Tally())


def hand_tallies(rules: Rules, scored: HandScored) -> list[Tally]:
    """What one scored hand adds to the counters of the player at each seat."""
    table = table_for(rules)
    no_score = [0] * len(table.units)
    reneged = sum(1 << unit for unit in scored.reneged)
    lines = score_hand(
        rules, scored.bids, scored.tricks, scores=no_score, bags=no_score, reneged=reneged
    ).lines
    made: dict[int, bool] = {}
    nil_made: dict[int, bool] = {}
    bags = [0] * len(table.units)
    for line in lines:
        if line.rule in CONTRACT_MADE:
            made[line.unit] = True
        elif line.rule in CONTRACT_SET:
            made[line.unit] = False
        elif line.rule in SPECIAL_CONTRACTS:
            made[line.unit] = line.points > 0
        elif line.rule in NILS:
            nil_made[int(line.facts[0])] = line.points > 0
        elif line.rule in BAGS:
            bags[line.unit] += int(line.facts[0])
    tallies = []
    for seat, bid in enumerate(scored.bids):
        unit = table.unit_of[seat]
        tally = Tally(hands=1, bags=bags[unit])
        if bid is None:
            pass  # a hand without bidding (first_hand: no_bid): no bid to make or set
        elif is_nil(bid):
            tally.nils_made, tally.nils_failed = (1, 0) if nil_made[seat] else (0, 1)
        else:
            tally.bids_made, tally.bids_set = (1, 0) if made[unit] else (0, 1)
        tallies.append(tally)
    return tallies


class PlayersModel(PerGameModel[PlayerGame]):
    name = "players"
    tables = (players, player_games)

    async def load(self, conn: Statements, game_ids: Sequence[str]) -> dict[str, PlayerGame]:
        rows = await fetch(conn, *where_in(player_games, "game_id", game_ids))
        return {
            game_id: PlayerGame(game_id, msgspec.convert(rules, Rules), seated, version)
            for game_id, rules, seated, version in rows
        }

    def fold(self, state: PlayerGame | None, commit: Commit) -> PlayerGame:
        for event in commit.events:
            if isinstance(event, GameCreated):
                rules = event.rules
                state = PlayerGame(event.game_id, rules, [None] * rules.players, 0)
            elif state is None:
                raise ValueError(f"game {commit.game_id} has events before game_created")
            elif isinstance(event, SeatTaken):
                if event.player not in state.players:
                    state.tally(event.player).games += 1
                state.players[event.seat] = event.player
            elif isinstance(event, HandScored):
                for seat, tally in enumerate(hand_tallies(state.rules, event)):
                    player = state.players[seat]
                    if player is not None:
                        state.tally(player).add(tally)
            elif isinstance(event, GameEnded):
                units = table_for(state.rules).units
                winners = {state.players[seat] for unit in event.winners for seat in units[unit]}
                for player in winners:
                    if player is not None:
                        state.tally(player).wins += 1
        if state is None:
            raise ValueError(f"game {commit.game_id} has no game_created")
        return state

    async def save(self, conn: Statements, states: dict[str, PlayerGame]) -> None:
        games = [
            {"game_id": s.game_id, "rules": s.rules, "players": s.players, "version": s.version}
            for s in states.values()
        ]
        totals: dict[str, Tally] = {}
        for state in states.values():
            for player, change in state.changes.items():
                totals.setdefault(player, Tally()).add(change)
        rows: list[dict[str, Any]] = [
            {"player": player, **{c: getattr(tally, c) for c in COUNTERS}}
            for player, tally in sorted(totals.items())
        ]
        await upsert(conn, player_games, games, keys=["game_id"])
        await upsert(conn, players, rows, keys=["player"], add=COUNTERS)
