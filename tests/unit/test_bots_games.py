"""Bots over whole games: under every preset and a spread of options they only ever send legal
actions, never renege, and games end; and with fixed seeds they beat random players widely."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.bots import PRESETS, play_game, run_matchup
from domain.rules import resolve_rules
from domain.table import table_for
from services.bots.memory import Event
from services.bots.strategy import Bot, Player, RandomPlayer, View, as_json

JOKER_ORDERS = ["jokers", "jokers_deuce", "jokers_deuces"]


@st.composite
def rule_sets(draw: st.DrawFn) -> dict[str, Any]:
    """A playable rule set: a preset and some overrides, short games."""
    preset = draw(st.sampled_from(PRESETS))
    raw: dict[str, Any] = {"preset": preset, "max_hands": draw(st.sampled_from([1, 2]))}
    base = resolve_rules(raw)
    if base.decks == 1 and not base.jokers and draw(st.booleans()):
        raw["jokers"] = True
        raw["trump_order"] = draw(st.sampled_from(JOKER_ORDERS))
        raw["deck_remove"] = ["2C", "2H", "2D"] if base.players == 3 else ["2C", "2H"]
    # The options of play are always drawn: every game exercises some of them.
    raw["must_beat"] = draw(st.booleans())
    raw["renege"] = draw(st.sampled_from(["reject", "penalize"]))
    raw["spades_lead"] = draw(st.sampled_from(["broken", "any"]))
    raw["first_lead"] = draw(st.sampled_from(["left_of_dealer", "lowest_club", "dealer"]))
    options: dict[str, st.SearchStrategy[Any]] = {
        "min_bid": st.sampled_from([0, 1]),
        "nil": st.booleans(),
        "nil_value": st.sampled_from([100, 50]),
        "blind_nil": st.booleans(),
        "blind_nil_behind": st.sampled_from([None, 100]),
        "failed_nil_tricks": st.sampled_from(["bags_if_partner_made", "partner", "none"]),
        "overtrick_points": st.sampled_from([1, 0, -1, -10]),
        "bag_limit": st.sampled_from([None, 10, 3]),
        "ten_for_two_hundred": st.booleans(),
        "boston": st.booleans(),
        "first_hand": st.sampled_from(["bid", "no_bid"]),
        "blind_bids": st.sampled_from([0, 6]),
    }
    if base.partnerships:
        options["team_min_bid"] = st.sampled_from([0, 4])
        options["blind_nil_pass"] = st.sampled_from([0, 1, 2])
    raw.update(draw(st.fixed_dictionaries({}, optional=options)))
    if draw(st.booleans()):  # far enough behind for blind nil from the first hand
        raw["blind_nil_behind"] = None
    return raw


class Watched:
    """A player whose every action is checked against the view it answered."""

    def __init__(self, player: Player, seat: int) -> None:
        self.player = player
        self.seat = seat
        self.actions = 0
        self.reneges = 0

    def observe(self, event: Event, position: int | None = None) -> None:
        fields = event if isinstance(event, Mapping) else msgspec.to_builtins(event)
        if fields.get("type") == "card_played" and fields["seat"] == self.seat:
            self.reneges += bool(fields.get("renege"))
        self.player.observe(event, position)

    def act(self, view: View) -> dict[str, Any] | None:
        data = as_json(view)
        action = self.player.act(data)
        assert action is not None, f"seat {self.seat} gave no action for {data['legal']}"
        if action["type"] in ("pass", "discard"):
            due = next(a for a in data["legal"] if a["type"] == action["type"])
            assert len(action["cards"]) == due["count"]
            assert Counter(action["cards"]) <= Counter(data["hand"])
        else:
            assert action in data["legal"], action
        self.actions += 1
        return action


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    rules=rule_sets(),
    bots=st.lists(st.booleans(), min_size=6, max_size=6),
    behind=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_bots_send_only_legal_actions_never_renege_and_games_end(
    rules: dict[str, Any], bots: list[bool], behind: bool, seed: int
) -> None:
    resolved = resolve_rules(rules)
    units = len(table_for(resolved).units)
    # Far behind a side near the target, a bot may bid blind nil (and pass, in partnership).
    scores = (0, *[420] * (units - 1)) if behind else None
    rng = random.Random(seed)
    watched = [
        Watched(Bot() if bots[seat] or seat == 0 else RandomPlayer(rng), seat)
        for seat in range(resolved.players)
    ]
    result = play_game(rules, watched, seed, scores)
    assert result.winners
    for seat, player in enumerate(watched):
        if isinstance(player.player, Bot):
            assert player.actions > 0
            assert player.reneges == 0, f"bot at seat {seat} reneged"


def test_a_bot_team_beats_a_random_team_by_a_wide_margin() -> None:
    figures = run_matchup("partnership", "team", games=12, seed=100)
    assert figures.wins >= 11
    assert figures.win_low > figures.fair_share
    assert figures.score_difference > 1000


def test_a_six_player_bot_team_beats_two_random_teams_by_a_wide_margin() -> None:
    figures = run_matchup("six-player", "team", games=8, seed=300)
    assert figures.wins >= 7
    assert figures.win_low > figures.fair_share
    assert figures.score_difference > 1000


def test_a_jokers_54_bot_team_beats_a_random_team_by_a_wide_margin() -> None:
    figures = run_matchup("jokers-54", "team", games=8, seed=400)
    assert figures.wins >= 7
    assert figures.win_low > figures.fair_share
    assert figures.score_difference > 1000


def test_a_cutthroat_bot_beats_two_random_players_by_a_wide_margin() -> None:
    figures = run_matchup("cutthroat", "one", games=12, seed=200)
    assert figures.wins >= 11
    assert figures.win_low > figures.fair_share
    assert figures.score_difference > 1000
