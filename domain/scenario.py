"""Scenario files (docs/rules.md): run a case through the same ``decide``/``evolve`` as the service.

A case is a JSON object with ``rules``, ``dealer``, ``start`` and either ``deals`` (hands played
card by card) or ``tallies`` (bids and tricks per seat). :func:`run_case` returns the outcome;
:func:`differences` compares it with the case's ``expect``. A case that cannot be run raises
:class:`MalformedCase` naming the case and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from domain.bids import Bid, read_bid
from domain.cards import Card
from domain.commands import (
    AnyCommand,
    CreateGame,
    DealHand,
    DiscardCards,
    PlaceBid,
    RecordTally,
    TakeSeat,
    from_scenario,
)
from domain.deal_phase import is_bidding_hand
from domain.errors import RuleViolation
from domain.events import AnyEvent, HandDealt, HandScored, TrickWon
from domain.game import check_deck, check_hands, decide, evolve
from domain.rules import resolve_rules
from domain.shuffle import DealSource, DealtHands, SeededDeal, StackedDeck, deal_out
from domain.state import Game
from domain.table import Table

SCENARIO_GAME_ID = "scenario"
"""The id of the game a case plays (its name may be any text)."""


class MalformedCase(Exception):
    """A case that cannot be run: ``case`` names it, ``field`` the part that is wrong."""

    def __init__(self, case: str, field: str, message: str) -> None:
        super().__init__(f"case {case!r}, field {field}: {message}")
        self.case = case
        self.field = field
        self.message = message


class _Run:
    """One case in progress: the game state and what the outcome records."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.state: Game | None = None
        self.hands: list[dict[str, Any]] = []
        self.rejected: list[dict[str, Any]] = []
        self.trick_winners: list[int] = []
        self.dealer = 0
        self.with_tricks = True

    def game(self) -> Game:
        assert self.state is not None
        return self.state

    def apply(self, command: AnyCommand, field: str) -> None:
        """Run a set-up command; a refusal makes the case malformed."""
        try:
            self.record(decide(self.state, command))
        except RuleViolation as violation:
            raise MalformedCase(self.name, field, f"{violation.code}: {violation.detail}") from None

    def record(self, events: list[AnyEvent]) -> None:
        for event in events:
            self.state = evolve(self.state, event)
            if isinstance(event, HandDealt):
                self.dealer = event.dealer
                self.trick_winners = []
            elif isinstance(event, TrickWon):
                self.trick_winners.append(event.seat)
            elif isinstance(event, HandScored):
                hand: dict[str, Any] = {
                    "dealer": self.dealer,
                    "bids": list(event.bids),
                    "tricks": list(event.tricks),
                }
                if self.with_tricks:
                    hand["trick_winners"] = list(self.trick_winners)
                hand |= {
                    "points": list(event.points),
                    "scores": list(event.scores),
                    "bags": list(event.bags),
                }
                self.hands.append(hand)


def run_case(case: Any, position: int = 0) -> dict[str, Any]:
    """Run one case and return its outcome (docs/rules.md, "Outcomes")."""
    if not isinstance(case, Mapping):
        raise MalformedCase(f"#{position}", "case", "a case is a JSON object")
    name = case.get("name", f"#{position}")
    if not isinstance(name, str):
        raise MalformedCase(f"#{position}", "name", "a name is a string")
    run = _Run(name)
    try:
        rules = resolve_rules(case.get("rules", {}))
    except RuleViolation as violation:
        raise MalformedCase(name, "rules", violation.detail) from None
    table = rules.table
    dealer = case.get("dealer", 0)
    if isinstance(dealer, bool) or not isinstance(dealer, int) or not 0 <= dealer < rules.players:
        raise MalformedCase(name, "dealer", f"{dealer!r} is not a seat")
    scores, bags = _start(name, case.get("start", {}), len(table.units))
    has_deals, has_tallies = "deals" in case, "tallies" in case
    if has_deals == has_tallies:
        raise MalformedCase(name, "deals", "a case has deals or tallies, not both or neither")
    # A case's name is free text, not a game id: the game it plays gets a fixed one.
    create = CreateGame(SCENARIO_GAME_ID, rules.to_json(), dealer, scores=scores, bags=bags)
    run.apply(create, "rules")
    for seat in range(rules.players):
        run.apply(TakeSeat(f"seat {seat}", seat), "rules")
    if has_deals:
        _play_deals(run, table, case["deals"])
    else:
        run.with_tricks = False
        _score_tallies(run, table, case["tallies"])
    game = run.game()
    return {
        "name": name,
        "units": [list(unit) for unit in table.units],
        "hands": run.hands,
        "rejected": run.rejected,
        "scores": list(game.scores),
        "bags": list(game.bags),
        "game_over": game.status == "finished",
        "winners": list(game.winners),
    }


def _ints(value: Any, count: int) -> bool:
    return (
        isinstance(value, list)
        and len(value) == count
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    )


def _start(name: str, start: Any, units: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if not isinstance(start, Mapping):
        raise MalformedCase(name, "start", "start is an object with scores and bags")
    for key in start:
        if key not in ("scores", "bags"):
            raise MalformedCase(name, f"start.{key}", "unknown field")
    scores = start.get("scores", [0] * units)
    bags = start.get("bags", [0] * units)
    if not _ints(scores, units):
        raise MalformedCase(name, "start.scores", f"needs {units} integers, one per unit")
    if not _ints(bags, units) or min(bags) < 0:
        raise MalformedCase(name, "start.bags", f"needs {units} counts, one per unit")
    return tuple(scores), tuple(bags)


def _cards(name: str, field: str, texts: Any) -> tuple[Card, ...]:
    if not isinstance(texts, list):
        raise MalformedCase(name, field, "a list of cards")
    try:
        return tuple(Card.parse(text) for text in texts)
    except RuleViolation as violation:
        raise MalformedCase(name, field, violation.detail) from None


def _source(name: str, table: Table, deal: Any, field: str, dealer: int) -> DealSource:
    if not isinstance(deal, Mapping):
        raise MalformedCase(name, field, "a deal is an object")
    given = [key for key in ("hands", "deck", "seed") if key in deal]
    unknown = [key for key in deal if key not in ("hands", "deck", "seed", "actions")]
    if unknown:
        raise MalformedCase(name, f"{field}.{unknown[0]}", "unknown field")
    if len(given) != 1:
        raise MalformedCase(name, field, "a deal gives exactly one of hands, deck, seed")
    key = given[0]
    try:
        if key == "hands":
            hands = deal["hands"]
            if not isinstance(hands, list):
                raise MalformedCase(name, f"{field}.hands", "a list of hands")
            parsed = tuple(
                _cards(name, f"{field}.hands[{seat}]", hand) for seat, hand in enumerate(hands)
            )
            return DealtHands(check_hands(table, parsed, dealer))
        if key == "deck":
            return StackedDeck(check_deck(table, _cards(name, f"{field}.deck", deal["deck"])))
    except RuleViolation as violation:
        raise MalformedCase(name, f"{field}.{key}", violation.detail) from None
    seed = deal["seed"]
    if not isinstance(seed, str):
        raise MalformedCase(name, f"{field}.seed", "a seed is a string")
    return SeededDeal(seed.encode())


def _play_deals(run: _Run, table: Table, deals: Any) -> None:
    if not isinstance(deals, list):
        raise MalformedCase(run.name, "deals", "a list of deals")
    first = run.game().first_dealer or 0
    sources = [
        _source(run.name, table, deal, f"deals[{d}]", (first + d) % table.players)
        for d, deal in enumerate(deals)
    ]
    for d, (deal, source) in enumerate(zip(deals, sources, strict=True)):
        actions = deal.get("actions", [])
        if not isinstance(actions, list):
            raise MalformedCase(run.name, f"deals[{d}].actions", "a list of actions")
        game = run.game()
        if game.status == "finished":
            run.rejected.extend(
                {"deal": d, "action": i, "code": "game_over"} for i in range(len(actions))
            )
            continue
        if game.hand is not None:
            break  # the previous deal stopped before its hand ended: the case ends there
        run.apply(DealHand(source), f"deals[{d}]")
        for i, action in enumerate(actions):
            try:
                events = decide(run.state, from_scenario(action))
            except RuleViolation as violation:
                run.rejected.append({"deal": d, "action": i, "code": violation.code})
                continue
            run.record(events)


def _score_tallies(run: _Run, table: Table, tallies: Any) -> None:
    if not isinstance(tallies, list):
        raise MalformedCase(run.name, "tallies", "a list of tallies")
    players = table.players
    rules = table.rules
    for t, tally in enumerate(tallies):
        field = f"tallies[{t}]"
        if not isinstance(tally, Mapping) or not {"tricks"} <= set(tally) <= {"bids", "tricks"}:
            raise MalformedCase(run.name, field, "a tally is an object with bids and tricks")
        if run.game().status == "finished":
            raise MalformedCase(run.name, field, "the game was already over")
        number = run.game().hands_played + 1
        bidding = is_bidding_hand(rules, number)
        bids = tally.get("bids", None if bidding else [None] * players)
        tricks = tally["tricks"]
        if not isinstance(bids, list) or len(bids) != players:
            raise MalformedCase(run.name, f"{field}.bids", f"needs {players} bids")
        if not bidding and any(bid is not None for bid in bids):
            raise MalformedCase(run.name, f"{field}.bids", "this hand has no bidding: all null")
        if not _ints(tricks, players):
            raise MalformedCase(run.name, f"{field}.tricks", f"needs {players} trick counts")
        dealer = ((run.game().first_dealer or 0) + run.game().hands_played) % players
        hands = deal_out(table.pack, players, dealer, table.hand_size, rules.dealer_discard)
        run.apply(DealHand(DealtHands(hands)), field)
        if rules.dealer_discard:  # the tally's dealer has looked: it discarded
            discard = hands[dealer][table.hand_size :]
            run.apply(DiscardCards(dealer, discard), field)
        if bidding:
            for k in range(players):
                seat = (dealer + 1 + k) % players
                where = f"{field}.bids[{seat}]"
                run.apply(PlaceBid(seat, _tally_bid(run.name, where, bids[seat])), where)
        run.apply(RecordTally(tuple(tricks)), f"{field}.tricks")


def _tally_bid(name: str, field: str, value: Any) -> Bid:
    try:
        return read_bid(value)
    except RuleViolation as violation:
        raise MalformedCase(name, field, violation.detail) from None


def differences(expect: Any, outcome: Any, path: str = "") -> list[str]:
    """Every field of ``expect`` that ``outcome`` does not match, as ``path: expected, got``.

    Objects match on the keys ``expect`` gives; lists match element by element and in length.
    """
    where = path or "outcome"
    if isinstance(expect, Mapping):
        if not isinstance(outcome, Mapping):
            return [f"{where}: expected {expect!r}, got {outcome!r}"]
        found: list[str] = []
        for key, value in expect.items():
            sub = f"{path}.{key}" if path else key
            if key not in outcome:
                found.append(f"{sub}: expected {value!r}, but the outcome has no such field")
            else:
                found.extend(differences(value, outcome[key], sub))
        return found
    if isinstance(expect, list):
        if not isinstance(outcome, list) or len(expect) != len(outcome):
            return [f"{where}: expected {expect!r}, got {outcome!r}"]
        found = []
        for i, (want, got) in enumerate(zip(expect, outcome, strict=True)):
            found.extend(differences(want, got, f"{path}[{i}]"))
        return found
    if type(expect) is not type(outcome) and not (
        isinstance(expect, (int, float))
        and isinstance(outcome, (int, float))
        and not isinstance(expect, bool)
        and not isinstance(outcome, bool)
    ):
        return [f"{where}: expected {expect!r}, got {outcome!r}"]
    if expect != outcome:
        return [f"{where}: expected {expect!r}, got {outcome!r}"]
    return []


def cases_of(document: Any) -> Sequence[Any]:
    """A scenario file holds one case or a list of them."""
    return document if isinstance(document, list) else [document]
