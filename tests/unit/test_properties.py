"""Random legal games, for every preset and a spread of rule overrides, checked against
docs/rules.md.

Each game is driven through ``decide``/``evolve`` with choices taken from ``legal_actions``. The
checks are independent of the engine where they can be: which seat wins a trick, which cards and
bids are legal, the score of a hand and the end of the game are recomputed here from docs/rules.md;
what each seat may see is tracked from what happened at the table.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from domain.bids import Bid
from domain.cards import CARDS, Card, cards_in
from domain.commands import (
    AnyCommand,
    CreateGame,
    DiscardCards,
    Draw,
    LookAtHand,
    PassCards,
    PlaceBid,
    PlayCard,
    TakeSeat,
)
from domain.errors import CODES, RuleViolation
from domain.events import (
    AnyEvent,
    BidPlaced,
    CardDrawn,
    CardPlayed,
    CardsDiscarded,
    CardsPassed,
    CardsReceived,
    GameEnded,
    HandDealt,
    HandLooked,
    HandScored,
    TrickWon,
)
from domain.game import (
    DiscardDue,
    PassDue,
    decide,
    evolve,
    legal_actions,
    legal_bids,
    legal_plays,
)
from domain.rules import Rules, resolve_rules
from domain.scoring import score_hand
from domain.shuffle import SeededDeal
from domain.state import Game, cards_held
from domain.views import PUBLIC, event_for, public_view, seat_view

PRESETS = [
    "partnership",
    "solo",
    "cutthroat",
    "three-player-house",
    "two-player",
    "six-player",
    "jokers-54",
]
TRUMP_ORDERS = ["jokers", "jokers_deuce", "jokers_deuces"]
RANKS = "23456789TJQKA"
CARD_TEXTS = {str(card) for card in CARDS}
HANDS_PER_GAME = 2

SETTINGS = settings(
    max_examples=8,
    deadline=None,
    database=None,
    # Shrinking a game driven by ``st.randoms()`` takes far longer than finding a failure;
    # the failing example is reported as found.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --------------------------------------------------------------------------- rule sets


@st.composite
def rule_sets(draw: st.DrawFn, preset: str) -> dict[str, Any]:
    """A rule set of ``preset``, with or without a spread of overrides that can be played:
    the pack (jokers, two decks, the dealer's discard) as well as the options of play."""
    raw: dict[str, Any] = {"preset": preset}
    if not draw(st.booleans()):
        return raw
    raw.update(draw(packs(resolve_rules(raw))))
    base = resolve_rules(raw)
    optional: dict[str, st.SearchStrategy[Any]] = {
        "must_beat": st.booleans(),
        "renege": st.sampled_from(["reject", "penalize"]),
        "spades_lead": st.sampled_from(["broken", "any"]),
        "first_lead": st.sampled_from(["left_of_dealer", "lowest_club", "dealer"]),
        "first_hand": st.sampled_from(["bid", "no_bid"]),
        "min_bid": st.sampled_from([0, 1]),
        "nil": st.booleans(),
        "nil_value": st.sampled_from([100, 50]),
        "blind_nil": st.booleans(),
        "blind_nil_value": st.sampled_from([200, 100]),
        "blind_nil_behind": st.sampled_from([None, 100]),
        "blind_bids": st.sampled_from([0, 1, 6, base.tricks_per_hand]),
        "failed_nil_tricks": st.sampled_from(["bags_if_partner_made", "partner", "none"]),
        "failed_bid": st.sampled_from(["bid", "short"]),
        "overtrick_points": st.sampled_from([1, 0, -1, -10]),
        "bag_limit": st.sampled_from([None, 10, 3]),
        "ten_for_two_hundred": st.booleans(),
        "boston": st.booleans(),
        "all_tricks_bonus": st.sampled_from([0, 100]),
        "target": st.sampled_from([150, 500]),
        "lose_at": st.sampled_from([None, -100]),
        "max_hands": st.sampled_from([None, 1]),
    }
    if base.partnerships:
        optional["team_min_bid"] = st.sampled_from([0, 4])
        optional["blind_nil_pass"] = st.sampled_from([0, 1, 2])
    raw.update(draw(st.fixed_dictionaries({}, optional=optional)))
    if raw.get("boston") and raw.get("blind_bids") and draw(st.booleans()):
        raw["blind_boston"] = True
    return raw


@st.composite
def packs(draw: st.DrawFn, base: Rules) -> dict[str, Any]:
    """A pack that divides evenly among ``base``'s players (docs/rules.md's table and ``002``'s
    paragraphs on jokers and six players, and more), every option of the pack given."""
    order = draw(st.sampled_from(TRUMP_ORDERS))

    def pack(jokers: bool, decks: int, remove: list[str], discard: int = 0, out: int = 0) -> Any:
        return {
            "jokers": jokers,
            "trump_order": order if jokers else "standard",
            "decks": decks,
            "deck_remove": remove,
            "dealer_discard": discard,
            "out_of_play": out,
        }

    choices = {
        2: [pack(True, 1, ["2C", "2H"]), pack(False, 2, [])],
        3: [
            pack(True, 1, ["2C", "2H", "2D"]),
            pack(True, 1, []),
            pack(False, 1, [], out=1),
            pack(False, 2, ["2C", "2C"], discard=3),
        ],
        4: [
            pack(True, 1, ["2C", "2H"]),
            pack(True, 1, [], discard=2),
            pack(False, 2, []),
            pack(True, 2, [], discard=4),
            pack(True, 2, ["BJ", "LJ", "2C", "2C"]),
        ],
        6: [
            pack(True, 2, []),
            pack(True, 2, ["2C", "2C"], discard=4),
            pack(False, 2, [], discard=2),
            pack(False, 1, [], out=4),
        ],
    }[base.players]
    chosen: dict[str, Any] = draw(st.sampled_from(choices))
    return chosen


# --------------------------------------------------------------------------- docs/rules.md, again


class Reference:
    """The card order and legality of a rule set, as docs/rules.md states them."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        every = [rank + suit for suit in "CDHS" for rank in RANKS]
        every += ["BJ", "LJ"] if rules.jokers else []
        self.pack = Counter(dict.fromkeys(every, rules.decks))
        self.pack.subtract(str(card) for card in rules.deck_remove)
        self.pack = +self.pack  # drop the cards taken out of every deck
        spades = [rank + "S" for rank in reversed(RANKS)]
        jokers = ["BJ", "LJ"]  # every order but standard needs jokers, and jokers need one
        if rules.trump_order == "jokers":
            order = [*jokers, *spades]
        elif rules.trump_order == "jokers_deuce":
            order = [*jokers, "2S", *spades[:-1]]
        elif rules.trump_order == "jokers_deuces":
            order = [*jokers, "2D", "2S", *spades[:-1]]
        else:
            order = spades
        self.trumps = [card for card in order if card in self.pack]
        players = rules.players
        self.units: list[list[int]] = (
            [[seat, seat + players // 2] for seat in range(players // 2)]
            if rules.partnerships
            else [[seat] for seat in range(players)]
        )

    def partner(self, seat: int) -> int | None:
        unit = self.units[self.unit_of(seat)]
        return next((other for other in unit if other != seat), None)

    def suit(self, card: str) -> str:
        return "S" if card in self.trumps else card[1]

    def power(self, card: str) -> int:
        if card in self.trumps:
            return 100 - self.trumps.index(card)
        return RANKS.index(card[0])

    def beats(self, card: str, winning: str) -> bool:
        """Whether ``card``, played after ``winning``, takes the trick from it; of two identical
        cards (two decks) the one played later wins."""
        if card == winning:
            return True
        if self.suit(card) == self.suit(winning):
            return self.power(card) > self.power(winning)
        return self.suit(card) == "S"

    def winning(self, trick: Sequence[str]) -> int:
        """The position in the trick of the card that wins it so far."""
        best = 0
        for position in range(1, len(trick)):
            if self.beats(trick[position], trick[best]):
                best = position
        return best

    def playable(
        self, hold: set[str], trick: Sequence[str], broken: bool, opening: str | None
    ) -> set[str]:
        """The cards the seat may play: under ``renege: penalize`` any card when following."""
        if trick and self.rules.renege == "penalize":
            return set(hold)
        return self.honest(hold, trick, broken, opening)

    def honest(
        self, hold: set[str], trick: Sequence[str], broken: bool, opening: str | None
    ) -> set[str]:
        """The cards the seat may play without reneging."""
        rules = self.rules
        if not trick:
            if opening is not None:
                return {opening}
            others = {card for card in hold if self.suit(card) != "S"}
            if rules.spades_lead == "broken" and not broken and others:
                return others
            return set(hold)
        led = self.suit(trick[0])
        allowed = {card for card in hold if self.suit(card) == led} or set(hold)
        if rules.must_beat:
            winning = trick[self.winning(trick)]
            beaters = {card for card in allowed if self.beats(card, winning)}
            if beaters:
                return beaters
        return allowed

    def biddable(
        self, seat: int, bids: Sequence[Bid | None], looked: bool, scores: Sequence[int]
    ) -> set[Bid]:
        rules = self.rules
        hand_size = rules.tricks_per_hand
        floor = 0
        partner = self.partner(seat)
        if rules.partnerships and rules.team_min_bid and partner is not None:
            partner_bid = bids[partner]
            if partner_bid is not None:
                floor = rules.team_min_bid - self.tricks_of(partner_bid)
        out: set[Bid] = set(range(max(rules.min_bid, floor), hand_size + 1))
        if rules.blind_bids and not looked:
            out |= {f"blind_{n}" for n in range(max(rules.blind_bids, floor), hand_size + 1)}
        if rules.nil and floor <= 0:
            out.add("nil")
            unit = self.unit_of(seat)
            best_other = max(score for u, score in enumerate(scores) if u != unit)
            far_enough = (
                rules.blind_nil_behind is None
                or best_other - scores[unit] >= rules.blind_nil_behind
            )
            if rules.blind_nil and not looked and far_enough:
                out.add("blind_nil")
        return out

    @staticmethod
    def tricks_of(bid: Bid | None) -> int:
        """What a bid adds to a contract."""
        if isinstance(bid, int):
            return bid
        if isinstance(bid, str) and bid.startswith("blind_") and bid != "blind_nil":
            return int(bid.removeprefix("blind_"))
        return 0

    def unit_of(self, seat: int) -> int:
        return next(u for u, seats in enumerate(self.units) if seat in seats)

    def score(
        self,
        bids: Sequence[Bid | None],
        tricks: Sequence[int],
        scores: Sequence[int],
        bags: Sequence[int],
        reneged: set[int],
    ) -> tuple[list[int], list[int], list[int]]:
        """docs/rules.md, "Scoring a hand": points, scores and bags per unit."""
        rules = self.rules
        hand_size = rules.tricks_per_hand
        points_out, scores_out, bags_out = [], [], []
        for unit, seats in enumerate(self.units):
            cheat = unit in reneged
            if all(bid is None for bid in bids):  # first_hand: no_bid
                taken = sum(tricks[seat] for seat in seats)
                points = 0 if cheat else 10 * taken
                points_out.append(points)
                scores_out.append(scores[unit] + points)
                bags_out.append(bags[unit])
                continue
            nils = [seat for seat in seats if bids[seat] in ("nil", "blind_nil")]
            bidders = [seat for seat in seats if seat not in nils]
            contract = sum(self.tricks_of(bids[seat]) for seat in bidders)
            blind = any(str(bids[seat]).startswith("blind_") for seat in bidders)
            nil_tricks = sum(tricks[seat] for seat in nils)
            rule = rules.failed_nil_tricks if rules.partnerships else "none"
            counted = sum(tricks[seat] for seat in bidders)
            if rule == "partner":
                counted += nil_tricks
            points = 0
            earned = 0
            if bidders and rules.ten_for_two_hundred and contract == 10:
                points += 200 if counted == 10 and not cheat else -200
            elif bidders and rules.boston and contract == hand_size:
                value = 400 if blind and rules.blind_boston else 200
                points += value if counted == hand_size and not cheat else -value
            elif bidders or rule == "partner":
                times = 2 if blind else 1
                made = counted >= contract and not cheat
                if made:
                    over = counted - contract
                    points += times * 10 * contract + over * rules.overtrick_points
                    earned += over
                    if rule == "bags_if_partner_made" and bidders:
                        points += nil_tricks * rules.overtrick_points
                        earned += nil_tricks
                elif rules.failed_bid == "bid":
                    points -= times * 10 * contract
                else:
                    points -= times * 10 * max(contract - counted, 0)
            for seat in nils:
                value = rules.blind_nil_value if bids[seat] == "blind_nil" else rules.nil_value
                points += value if tricks[seat] == 0 and not cheat else -value
            if sum(tricks[seat] for seat in seats) == hand_size:
                points += rules.all_tricks_bonus
            count = bags[unit]
            if rules.bag_limit is not None:
                count += earned
                while count >= rules.bag_limit:
                    count -= rules.bag_limit
                    points -= rules.bag_penalty
            points_out.append(points)
            scores_out.append(scores[unit] + points)
            bags_out.append(count)
        return points_out, scores_out, bags_out

    def winners(self, scores: Sequence[int], hands: int) -> tuple[int, ...]:
        rules = self.rules
        over = (
            max(scores) >= rules.target
            or (rules.lose_at is not None and min(scores) <= rules.lose_at)
            or (rules.max_hands is not None and hands >= rules.max_hands)
        )
        top = [unit for unit, score in enumerate(scores) if score == max(scores)]
        return (top[0],) if over and len(top) == 1 else ()


# --------------------------------------------------------------------------- the table, watched


def texts(cards: Sequence[Card] | None) -> set[str]:
    return {str(card) for card in cards or ()}


def texts_of(cards: Sequence[Card] | None) -> list[str]:
    """Each card as text, as often as it is there."""
    return [str(card) for card in cards or ()]


def hand_cards(state: Game, seat: int) -> Counter[str]:
    """The seat's cards, each as often as it holds it (two decks)."""
    assert state.hand is not None
    return Counter(str(card) for card in cards_held(state.hand, seat))


def hand_texts(state: Game, seat: int) -> set[str]:
    return set(hand_cards(state, seat))


def shown(value: Any) -> set[str]:
    """The cards a view or an event carries, as its JSON would."""
    found: set[str] = set()
    stack = [msgspec.to_builtins(value)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item in CARD_TEXTS:
                found.add(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return found


@dataclass
class Watch:
    """What has happened in the hand being played, as the table saw it."""

    ref: Reference
    players: int
    removed: set[str]
    hands_scored: int = 0
    dealer: int = -1
    number: int = 0
    dealt: Counter[str] = field(default_factory=Counter)
    discarded: Counter[str] = field(default_factory=Counter)
    seen: list[set[str]] = field(default_factory=list)
    public: set[str] = field(default_factory=set)
    looked: set[int] = field(default_factory=set)
    bids: list[Bid | None] = field(default_factory=list)
    played: list[str] = field(default_factory=list)
    trick: list[str] = field(default_factory=list)
    leader: int = -1
    won: list[int] = field(default_factory=list)
    broken: bool = False
    reneged: set[int] = field(default_factory=set)
    ends: tuple[int, ...] = ()

    def allowed(self, reader: int | None) -> set[str]:
        own = self.seen[reader] if reader is not None else set()
        return own | self.public | self.removed

    def new_hand(self, event: HandDealt) -> None:
        self.dealer = event.dealer
        self.number = event.hand
        self.dealt = Counter(str(card) for hand in event.hands for card in hand)
        self.discarded = Counter()
        self.seen = [set() for _ in range(self.players)]
        self.public = set()
        self.looked = set()
        self.bids = [None] * self.players
        self.played = []
        self.trick = []
        self.leader = -1
        self.won = [0] * self.players
        self.broken = False
        self.reneged = set()


def first_leader(rules: Rules, state: Game, dealer: int) -> tuple[int, str | None]:
    """Who leads the hand, and the card that must open it (docs/rules.md, ``first_lead``)."""
    players = rules.players
    if rules.first_lead == "dealer":
        return dealer, None
    if rules.first_lead == "lowest_club":
        # Of two holders (two decks), the first clockwise from the dealer's left.
        clockwise = [(dealer + 1 + k) % players for k in range(players)]
        holders: dict[str, int] = {}
        for seat in clockwise:
            for card in hand_texts(state, seat):
                holders.setdefault(card, seat)
        clubs = [rank + "C" for rank in RANKS if rank + "C" in holders]
        if clubs:
            return holders[clubs[0]], clubs[0]
    return (dealer + 1) % players, None


class Game_:
    """One random game, checked at every step."""

    def __init__(self, raw: dict[str, Any], rnd: random.Random) -> None:
        self.rnd = rnd
        rules = resolve_rules(raw)
        self.rules = rules
        self.ref = Reference(rules)
        units = len(self.ref.units)
        scores = tuple(rnd.choice([0, 0, -50, 150, -150]) for _ in range(units))
        bags = tuple(rnd.randrange(10) for _ in range(units))
        self.first_dealer = rnd.randrange(rules.players)
        self.watch = Watch(self.ref, rules.players, {str(card) for card in rules.deck_remove})
        self.state: Game | None = None
        entropy = rnd.randbytes(rnd.randrange(4)).hex()
        self.send(
            CreateGame(
                "g", raw, dealer=self.first_dealer, entropy=entropy, scores=scores, bags=bags
            )
        )
        for seat in range(rules.players):
            self.send(TakeSeat(f"p{seat}", seat, entropy=rnd.randbytes(2).hex()))

    @property
    def game(self) -> Game:
        assert self.state is not None
        return self.state

    def deal(self) -> SeededDeal:
        return SeededDeal(self.rnd.randbytes(8))

    def send(self, command: AnyCommand) -> None:
        events = decide(self.state, command, deal=self.deal())
        for event in events:
            before = self.state
            self.state = evolve(self.state, event)
            if before is not None:
                self.observe(before, event)
        if any(isinstance(event, HandScored) for event in events):
            # The end of the game is checked after the whole hand (docs/rules.md).
            ended = [event for event in events if isinstance(event, GameEnded)]
            assert [event.winners for event in ended] == (
                [self.watch.ends] if self.watch.ends else []
            )
            assert (self.game.status == "finished") == bool(self.watch.ends)
            assert (self.game.hand is not None) == (not self.watch.ends)

    # ----------------------------------------------------------------------- per event

    def observe(self, before: Game, event: AnyEvent) -> None:
        watch, rules, ref = self.watch, self.rules, self.ref
        if isinstance(event, HandDealt):
            assert event.dealer == (self.first_dealer + watch.hands_scored) % rules.players
            watch.new_hand(event)
            self.dealt(event)
        elif isinstance(event, HandLooked):
            assert Counter(texts_of(event.cards)) == hand_cards(before, event.seat)
            watch.looked.add(event.seat)
            watch.seen[event.seat] |= texts(event.cards)
        elif isinstance(event, CardDrawn):
            assert event.card is not None
            watch.looked.add(event.seat)
            if event.kept:
                watch.seen[event.seat].add(str(event.card))
                watch.dealt[str(event.card)] += 1
            else:
                watch.public.add(str(event.card))
        elif isinstance(event, CardsDiscarded):
            # The dealer, once, its dealer_discard cards, from its hand, having looked.
            assert event.seat == watch.dealer
            assert not watch.discarded
            assert event.seat in watch.looked
            discard = Counter(texts_of(event.cards))
            assert discard.total() == rules.dealer_discard
            assert discard <= hand_cards(before, event.seat)
            watch.discarded = discard
        elif isinstance(event, BidPlaced):
            assert rules.first_hand == "bid" or watch.number > 1
            assert not rules.dealer_discard or watch.discarded
            looked = event.seat in watch.looked
            assert event.bid in ref.biddable(event.seat, watch.bids, looked, before.scores)
            watch.bids[event.seat] = event.bid
            if event.bid != "blind_nil" and not str(event.bid).startswith("blind_"):
                assert event.seat in watch.looked
        elif isinstance(event, CardsPassed):
            assert texts(event.cards) <= watch.seen[event.seat]
            assert len(event.cards or ()) == rules.blind_nil_pass
        elif isinstance(event, CardsReceived):
            watch.seen[event.seat] |= texts(event.cards)
        elif isinstance(event, CardPlayed):
            self.played(before, event)
        elif isinstance(event, TrickWon):
            winner = (watch.leader + ref.winning(watch.trick)) % rules.players
            assert event.seat == winner
            assert len(watch.trick) == rules.players
            watch.won[winner] += 1
            watch.trick = []
            watch.leader = winner
        elif isinstance(event, HandScored):
            self.scored(before, event)
        elif isinstance(event, GameEnded):
            assert event.winners == watch.ends
            assert event.scores == before.scores
        self.check_event(event)

    def dealt(self, event: HandDealt) -> None:
        """Card conservation at the deal: every card of the pack is dealt as often as the pack
        holds it, less what stays out of play; the dealer holds its discard besides."""
        rules, ref = self.rules, self.ref
        if not any(event.hands):  # the two-player draw: its pile is the pack
            assert Counter(texts_of(event.deck)) == ref.pack
            return
        sizes = [len(cards) for cards in event.hands]
        for seat, size in enumerate(sizes):
            extra = rules.dealer_discard if seat == event.dealer else 0
            assert size == rules.tricks_per_hand + extra
        dealt = self.watch.dealt
        assert dealt <= ref.pack
        assert (ref.pack - dealt).total() == rules.out_of_play
        if event.deck is not None:
            assert Counter(texts_of(event.deck)) == ref.pack

    def played(self, before: Game, event: CardPlayed) -> None:
        watch, ref = self.watch, self.ref
        card = str(event.card)
        if not watch.played:
            bidding = self.rules.first_hand == "bid" or watch.number > 1
            assert all((bid is not None) == bidding for bid in watch.bids)
            assert not self.rules.dealer_discard or watch.discarded
            watch.leader, _ = first_leader(self.rules, before, watch.dealer)
        seat = (watch.leader + len(watch.trick)) % self.rules.players
        assert event.seat == seat
        hold = hand_texts(before, seat)
        opening = None
        if not watch.played:
            _, opening = first_leader(self.rules, before, watch.dealer)
        honest = ref.honest(hold, watch.trick, watch.broken, opening)
        assert card in ref.playable(hold, watch.trick, watch.broken, opening)
        # A renege is an illegal follow, flagged only under penalize (a lead is never one).
        assert event.renege == (card not in honest)
        if event.renege:
            watch.reneged.add(ref.unit_of(seat))
        if watch.trick and ref.suit(card) == "S" and ref.suit(watch.trick[0]) != "S":
            watch.broken = True
        watch.trick.append(card)
        watch.played.append(card)
        watch.public.add(card)

    def scored(self, before: Game, event: HandScored) -> None:
        watch, ref, rules = self.watch, self.ref, self.rules
        hand_size = rules.tricks_per_hand
        # Card conservation: every card dealt (each copy of it) is played exactly once or
        # discarded by the dealer; the tricks add up to the hand.
        assert len(watch.played) == rules.players * hand_size
        assert Counter(watch.played) + watch.discarded == watch.dealt
        assert list(event.tricks) == watch.won
        assert sum(event.tricks) == hand_size
        assert list(event.bids) == watch.bids
        assert set(event.reneged) == watch.reneged
        # The score, from docs/rules.md, and from the engine's own scorer.
        points, scores, bags = ref.score(
            event.bids, event.tricks, before.scores, before.bags, watch.reneged
        )
        assert list(event.points) == points
        assert list(event.scores) == scores
        assert list(event.bags) == bags
        reneged = sum(1 << unit for unit in watch.reneged)
        result = score_hand(
            rules,
            event.bids,
            event.tricks,
            scores=before.scores,
            bags=before.bags,
            reneged=reneged,
        )
        assert (result.points, result.scores, result.bags) == (
            event.points,
            event.scores,
            event.bags,
        )
        # Simple invariants that need no scorer.
        for unit in range(len(ref.units)):
            assert event.scores[unit] == before.scores[unit] + event.points[unit]
            if rules.bag_limit is None or all(bid is None for bid in event.bids):
                assert event.bags[unit] == before.bags[unit]  # no bags without bidding
            else:
                assert 0 <= event.bags[unit] < rules.bag_limit
        if not (rules.partnerships or rules.ten_for_two_hundred or rules.boston):
            for seat, bid in enumerate(event.bids):
                plain = isinstance(bid, int) and seat not in watch.reneged
                if plain and rules.all_tricks_bonus == 0 and rules.bag_limit is None:
                    assert isinstance(bid, int)
                    taken = event.tricks[seat]
                    expected = (
                        10 * bid + (taken - bid) * rules.overtrick_points
                        if taken >= bid
                        else -10 * (bid if rules.failed_bid == "bid" else bid - taken)
                    )
                    assert event.points[seat] == expected
        watch.hands_scored += 1
        watch.ends = ref.winners(event.scores, watch.hands_scored)

    # ----------------------------------------------------------------------- what is seen

    def check_event(self, event: AnyEvent) -> None:
        if not self.watch.seen:
            return
        for reader in [PUBLIC, *range(self.rules.players)]:
            seen = event_for(event, reader)
            assert type(seen) is type(event)
            assert shown(seen) <= self.watch.allowed(reader), (reader, event)

    def check_views(self) -> None:
        game, watch = self.game, self.watch
        hand = game.hand
        assert shown(public_view(game)) <= watch.allowed(PUBLIC)
        for seat in range(self.rules.players):
            view = seat_view(game, seat)
            allowed = watch.allowed(seat)
            drawn: set[str] = set()
            if hand is not None and hand.phase == "draw" and hand.turn == seat:
                drawn = {str(hand.pile[hand.drawn])}
            assert shown(view) <= allowed | drawn, seat
            others = (
                set().union(*(hand_texts(game, o) for o in range(self.rules.players) if o != seat))
                if hand
                else set()
            )
            # With two decks another seat may hold a copy of one's own card, of one played, or
            # of one the rules name (deck_remove takes out one copy).
            own = hand_texts(game, seat) if hand else set()
            assert not (shown(view) & others) - own - drawn - watch.public - watch.removed
            if hand is not None:
                assert (view.hand is not None) == (seat in watch.looked)
                if view.hand is not None:
                    assert Counter(texts_of(view.hand)) == hand_cards(game, seat)

    # ----------------------------------------------------------------------- per step

    def check_legal(self) -> None:
        game, ref, watch = self.game, self.ref, self.watch
        hand = game.hand
        assert hand is not None
        for seat in range(self.rules.players):
            for action in legal_actions(game, seat):
                command = self.command(action)
                decide(game, command)  # accepted: raises otherwise
            if hand.phase == "play" and hand.turn == seat:
                opening = None
                if not watch.played:
                    _, opening = first_leader(self.rules, game, watch.dealer)
                hold = hand_texts(game, seat)
                expected = ref.playable(hold, watch.trick, watch.broken, opening)
                assert texts(cards_in(legal_plays(game, seat))) == expected
                for card in hold - expected:
                    self.refused(PlayCard(seat, Card.parse(card)))
            if hand.phase == "bid" and hand.turn == seat:
                looked = seat in watch.looked
                expected_bids = ref.biddable(seat, watch.bids, looked, game.scores)
                assert set(legal_bids(game, seat)) == expected_bids
                tricks = range(-1, self.rules.tricks_per_hand + 2)
                every: list[Bid] = [*tricks, "nil", "blind_nil"]
                every += [f"blind_{n}" for n in tricks if n >= 0]
                for bid in every:
                    if bid not in expected_bids:
                        self.refused(PlaceBid(seat, bid))

    def refused(self, command: AnyCommand) -> None:
        with pytest.raises(RuleViolation) as raised:
            decide(self.game, command)
        assert raised.value.code in CODES

    def command(self, action: Any) -> AnyCommand:
        if isinstance(action, (PassDue, DiscardDue)):
            hand = self.game.hand
            hold = cards_held(hand, action.seat) if hand else []
            cards = tuple(self.rnd.sample(hold, action.count))  # both copies, now and then
            kind = PassCards if isinstance(action, PassDue) else DiscardCards
            return kind(action.seat, cards)
        assert isinstance(action, (LookAtHand, Draw, PlaceBid, PlayCard))
        return action

    def random_action(self) -> AnyCommand:
        rnd, players = self.rnd, self.rules.players
        seat = rnd.randrange(-1, players + 1)
        kind = rnd.randrange(5)
        if kind == 0:
            return PlayCard(seat, rnd.choice(CARDS))
        if kind == 1:
            bid: Bid = rnd.choice([*range(-1, 20), "nil", "blind_nil", "blind_0", "blind_6"])
            return PlaceBid(seat, bid)
        if kind == 2:
            return Draw(seat, rnd.random() < 0.5)
        cards = tuple(rnd.choice(CARDS) for _ in range(rnd.randrange(5)))
        return PassCards(seat, cards) if kind == 3 else DiscardCards(seat, cards)

    def is_legal(self, command: AnyCommand, legal: list[Any]) -> bool:
        if isinstance(command, (PassCards, DiscardCards)):
            due_kind = PassDue if isinstance(command, PassCards) else DiscardDue
            due = [a for a in legal if isinstance(a, due_kind) and a.seat == command.seat]
            return bool(
                due
                and self.game.hand is not None
                and len(command.cards) == due[0].count
                and Counter(texts_of(command.cards)) <= hand_cards(self.game, command.seat)
            )
        return command in legal

    def step(self) -> None:
        self.check_views()
        self.check_legal()
        game = self.game
        players = range(self.rules.players)
        legal = [action for seat in players for action in legal_actions(game, seat)]
        for _ in range(2):
            command = self.random_action()
            if not self.is_legal(command, legal):
                self.refused(command)
        progress = [action for action in legal if not isinstance(action, LookAtHand)]
        looks = [action for action in legal if isinstance(action, LookAtHand)]
        assert progress, "a hand in play always has a next action"
        words = [a for a in progress if isinstance(a, PlaceBid) and isinstance(a.bid, str)]
        pick: Any = self.rnd.choice(progress)
        if looks and self.rnd.random() < 0.1:
            pick = self.rnd.choice(looks)
        elif words and self.rnd.random() < 0.3:  # nil, blind nil and blind bids, often
            blind = [a for a in words if str(a.bid).startswith("blind")]
            pick = self.rnd.choice(blind if blind and self.rnd.random() < 0.7 else words)
        self.send(self.command(pick))


def play(raw: dict[str, Any], rnd: random.Random) -> Game_:
    game = Game_(raw, rnd)
    while game.game.status == "playing" and game.watch.hands_scored < HANDS_PER_GAME:
        game.step()
    return game


@pytest.mark.parametrize("preset", PRESETS)
@SETTINGS
@given(data=st.data())
def test_random_legal_games(preset: str, data: st.DataObject) -> None:
    raw = data.draw(rule_sets(preset), label="rules")
    rnd = data.draw(st.randoms(use_true_random=False), label="choices")
    game = play(raw, rnd)
    assert game.watch.hands_scored >= 1


def test_the_reference_ranks_trumps_as_format_says() -> None:
    jokers = Reference(
        resolve_rules({"jokers": True, "trump_order": "jokers_deuces", "deck_remove": ["2C", "2H"]})
    )
    assert jokers.trumps[:5] == ["BJ", "LJ", "2D", "2S", "AS"]
    assert jokers.suit("2D") == "S"
    assert jokers.winning(["AS", "2S", "2D", "3S"]) == 2
    plain = Reference(resolve_rules({}))
    assert plain.winning(["AH", "2S", "KH", "3S"]) == 3
    assert plain.winning(["2D", "AH", "3D", "KC"]) == 2
