"""One hand played elsewhere, played again command by command as a live game would take it.

The findings name the first illegal play with its docs/rules.md code, a trick led or won by the
wrong seat, a draw the pile does not give, a count of tricks that does not add up, and a score
that is not the rules' (with the rules' arithmetic). After an illegal play or a wrong trick the
plays are not followed further (the hand has left the rules), but the score is still checked on
the table's own count of tricks.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec.structs import replace

from domain.bids import Bid
from domain.cards import Card
from domain.commands import (
    AnyCommand,
    CreateGame,
    DealHand,
    DiscardCards,
    Draw,
    PassCards,
    PlaceBid,
    PlayCard,
    RecordTally,
    TakeSeat,
)
from domain.deal_phase import is_bidding_hand
from domain.errors import RuleViolation
from domain.events import AnyEvent, CardDrawn, HandDealt, HandScored, TrickWon
from domain.game import decide, evolve
from domain.records import Deal, Discarded, Drawn, HandRecord, Pass, Trick
from domain.rules import Rules
from domain.scoring import HandScore, score_hand
from domain.shuffle import DealSource, DealtHands, StackedDeck, deal_out, entropy_bytes, shuffle
from domain.state import Game
from domain.table import table_for
from services.audit.deals import deal_findings, seed_bytes
from services.audit.disputes import refusal_finding, score_finding, trick_finding
from services.audit.history import Problem
from services.audit.record_file import (
    DealGiven,
    Given,
    HandGiven,
    Start,
    TallyGiven,
    TrickGiven,
    UnreadableRecord,
)
from services.audit.replay import HandAccount

LEAD_RULE = "the winner of a trick leads the next; the first lead is first_lead's"


class TableReplay:
    """One hand played again, command by command, as a live game would have taken it."""

    def __init__(self, rules: Rules, given: Given, start: Start, where: str) -> None:
        if given.hand > 1 and rules.first_hand == "no_bid":
            rules = replace(rules, first_hand="bid")  # the hand is played as a later one is
        self.rules = rules
        self.given = given
        self.bidding = is_bidding_hand(rules, 1)
        self.bids: list[Bid | None] = list(given.bids)
        if not self.bids and not self.bidding:  # a hand without bidding may leave them out
            self.bids = [None] * rules.players
        self.start = start
        self.where = where
        self.state: Game | None = None
        self.problems: list[Problem] = []
        self.events = 0
        self.off_rules = False
        """An illegal play or a wrong trick: the plays are not followed further."""
        self.end: tuple[list[int], list[int]] | None = None
        self.scored: HandScored | None = None
        self.dealt: HandDealt | None = None

    # ----------------------------------------------------------------- running the hand

    def run(self) -> HandAccount:
        self.open_table()
        self.deal()
        if isinstance(self.given, HandGiven):
            self.play_out(self.given)
        else:
            self.bid(self.bids)
            if not self.off_rules:
                self.send(RecordTally(tuple(self.given.tricks)), "tricks")
        return self.account()

    def open_table(self) -> None:
        rules, given = self.rules, self.given
        if not 0 <= given.dealer < rules.players:
            raise UnreadableRecord(f"{self.where}.dealer", f"{given.dealer} is not a seat")
        if len(self.bids) != rules.players:
            raise UnreadableRecord(f"{self.where}.bids", f"needs {rules.players} bids, one a seat")
        for seat, bid in enumerate(self.bids):
            if (bid is None) == self.bidding:
                why = "a bid a seat" if self.bidding else "none: the hand has no bidding (null)"
                raise UnreadableRecord(f"{self.where}.bids[{seat}]", f"needs {why}")
        entropies = self.entropies()
        create = CreateGame(
            "record",
            rules.to_json(),
            given.dealer,
            entropies[0],
            tuple(self.start.scores),
            tuple(self.start.bags),
        )
        self.setup(create, "start")
        for seat in range(rules.players):
            self.setup(TakeSeat(f"seat {seat}", seat, entropies[seat + 1]), "entropies")

    def entropies(self) -> list[str]:
        given = self.given
        count = self.rules.players + 1
        if isinstance(given, TallyGiven) or given.entropies is None:
            return [""] * count
        if len(given.entropies) != count:
            raise UnreadableRecord(
                f"{self.where}.entropies", f"needs {count}: the game's, then each seat's"
            )
        return list(given.entropies)

    def setup(self, command: AnyCommand, where: str) -> list[AnyEvent]:
        """A command that only sets the table up: a refusal makes the record unreadable."""
        try:
            events = decide(self.state, command)
        except RuleViolation as violation:
            raise UnreadableRecord(f"{self.where}.{where}", violation.detail) from None
        self.apply(events)
        return events

    def apply(self, events: Sequence[AnyEvent]) -> None:
        for event in events:
            self.state = evolve(self.state, event)
            self.events += 1
            if isinstance(event, HandScored):
                self.scored = event
            elif isinstance(event, HandDealt):
                self.dealt = event

    def send(self, command: AnyCommand, where: str) -> list[AnyEvent] | None:
        """A command of the hand; a refusal is a finding, and the plays stop there."""
        try:
            events = decide(self.state, command)
        except RuleViolation as violation:
            found = refusal_finding(self.version + 1, command, violation)
            self.found(found.check, f"{where}: {found.detail}", found.rule)
            self.off_rules = True
            return None
        self.apply(events)
        return events

    @property
    def version(self) -> int:
        return self.state.version if self.state is not None else 0

    def found(
        self, check: str, detail: str, rule: str | None = None, arithmetic: Sequence[str] = ()
    ) -> None:
        problem = Problem(self.version, check, detail, rule, self.given.hand, list(arithmetic))
        self.problems.append(problem)

    # ----------------------------------------------------------------- the deal

    def deal(self) -> None:
        table = table_for(self.rules)
        if isinstance(self.given, TallyGiven):
            dealer, discard = self.given.dealer, self.rules.dealer_discard
            hands = deal_out(table.pack, self.rules.players, dealer, table.hand_size, discard)
            self.setup(DealHand(DealtHands(hands)), "tricks")
            if discard:  # a score sheet's dealer has looked: it discarded
                self.setup(DiscardCards(dealer, hands[dealer][table.hand_size :]), "tricks")
            return
        source = self.deal_source(self.given.deal)
        try:
            events = decide(self.state, DealHand(source))
        except RuleViolation as violation:
            raise UnreadableRecord(f"{self.where}.deal", violation.detail) from None
        self.apply(events)
        self.check_hands_against_deck(self.given.deal)

    def deal_source(self, deal: DealGiven) -> DealSource:
        """The deck, else the hands, else the deck the seed derives with the entropies (the
        synthetic game deals hand 1, so the seed's shuffle for this hand is done here)."""
        if deal.deck is not None:
            return StackedDeck(tuple(deal.deck))
        if deal.hands is not None:
            return DealtHands(tuple(tuple(hand) for hand in deal.hands))
        seed, entropies = seed_bytes(deal.seed), self.entropy_bytes()
        if seed is not None and entropies is not None:
            pack = table_for(self.rules).pack
            return StackedDeck(shuffle(seed, entropies, self.given.hand, pack))
        raise UnreadableRecord(
            f"{self.where}.deal", "a deal gives its deck, its hands, or its seed and entropies"
        )

    def entropy_bytes(self) -> list[bytes] | None:
        given = self.given
        if isinstance(given, TallyGiven) or given.entropies is None:
            return None
        try:
            return entropy_bytes(given.entropies)
        except ValueError:
            raise UnreadableRecord(f"{self.where}.entropies", "not hex") from None

    def check_hands_against_deck(self, deal: DealGiven) -> None:
        """A record that gives both must deal its hands from its deck."""
        dealt = self.dealt
        if deal.deck is None or deal.hands is None or dealt is None or self.rules.deal == "draw":
            return
        given = [list(hand) for hand in deal.hands]
        if given != [list(hand) for hand in dealt.hands]:
            self.found(
                "deal",
                "the hands given are not the deck given, dealt one card at a time from the left "
                f"of dealer {self.given.dealer}",
                "deal: the deck is dealt one at a time from the left of the dealer",
            )

    # ----------------------------------------------------------------- draws, bids, passes, plays

    def play_out(self, given: HandGiven) -> None:
        if given.deal.deck is not None:  # dealt as hands, a draw's result is given: no draw
            self.draw(given.draws)
        if not self.off_rules:
            self.discard(given.discards)
        if not self.off_rules:
            self.bid(self.bids)
        if not self.off_rules:
            self.pass_cards(given.passes)
        for number, trick in enumerate(given.tricks, start=1):
            if self.off_rules:
                break
            self.play_trick(number, trick)

    def draw(self, draws: Sequence[Drawn]) -> None:
        """Each draw turn is two cards of the record: the one seen, then the one taken after."""
        for turn in range(0, len(draws) - 1, 2):
            seen, other = draws[turn], draws[turn + 1]
            where = f"draw turn {turn // 2 + 1}"
            events = self.send(Draw(seen.seat, seen.kept), where)
            if events is None:
                return
            drawn = [(e.seat, e.card, e.kept) for e in events if isinstance(e, CardDrawn)]
            recorded = [(d.seat, d.card, d.kept) for d in (seen, other)]
            if drawn != recorded:
                self.found(
                    "replay",
                    f"{where}: the record has {_drawn_text(recorded)}; the pile gives "
                    f"{_drawn_text(drawn)}",
                    "deal: draw (the top card is kept or discarded, the next taken or discarded)",
                )
                self.off_rules = True
                return

    def discard(self, discards: Sequence[Discarded]) -> None:
        """The dealer's discard (``dealer_discard``); a record without one when one is due
        leaves the hand short of its discard, which the first bid or play then finds."""
        for discarded in discards:
            where = f"the discard of seat {discarded.seat}"
            if self.send(DiscardCards(discarded.seat, tuple(discarded.cards)), where) is None:
                return

    def bid(self, bids: Sequence[Bid | None]) -> None:
        """The bids in the order they were made: from the left of the dealer round (none in a
        hand without bidding)."""
        players = self.rules.players
        for k in range(players):
            seat = (self.given.dealer + 1 + k) % players
            bid = bids[seat]
            if bid is None:
                return
            if self.send(PlaceBid(seat, bid), f"the bid of seat {seat}") is None:
                return

    def pass_cards(self, passes: Sequence[Pass]) -> None:
        for sent in passes:
            where = f"the pass of seat {sent.from_seat}"
            if self.send(PassCards(sent.from_seat, tuple(sent.cards)), where) is None:
                return

    def play_trick(self, number: int, trick: TrickGiven) -> None:
        state = self.state
        assert state is not None
        hand = state.hand
        leader = hand.turn if hand is not None else None
        if trick.leader is not None and leader is not None and trick.leader != leader:
            self.found(
                "replay",
                f"trick {number} is led by seat {trick.leader} in the record; seat {leader} "
                "leads it by the rules",
                LEAD_RULE,
            )
            self.off_rules = True
            return
        for position, played in enumerate(trick.cards, start=1):
            where = f"trick {number}, card {position}"
            events = self.send(PlayCard(played.seat, played.card), where)
            if events is None:
                return
            won = next((event for event in events if isinstance(event, TrickWon)), None)
            if won is not None:
                self.check_winner(number, trick, won, leader)

    def check_winner(
        self, number: int, trick: TrickGiven, won: TrickWon, leader: int | None
    ) -> None:
        if trick.winner is None or trick.winner == won.seat or leader is None:
            return
        cards = [played.card for played in trick.cards]
        finding = trick_finding(
            self.version, self.rules, number, leader, cards, won.seat, trick.winner
        )
        self.found(finding.check, finding.detail, finding.rule)
        self.off_rules = True

    # ----------------------------------------------------------------- the score

    def account(self) -> HandAccount:
        """Score the hand (the replay's, else the table's own count of tricks) and judge the
        record's figures against it."""
        start_scores, start_bags = tuple(self.start.scores), tuple(self.start.bags)
        bids, tricks, reneged = self.tally()
        score = self.score_of(bids, tricks, reneged)
        if score is not None:
            self.end = (list(score.scores), list(score.bags))
            self.judge_score(score)
        dealt = self.dealt or HandDealt(self.given.hand, self.given.dealer, None, ())
        account = HandAccount(
            self.given.hand,
            dealt,
            0,
            self.rules,
            scored_at=self.version,
            record=self.record(score),
            score=score,
            start_scores=start_scores,
            start_bags=start_bags,
        )
        account.deal_verified = self.verify_deal(dealt)
        return account

    def tally(self) -> tuple[list[Bid | None], list[int] | None, int]:
        """The bids, tricks and reneging units to score: the replay's when it reached the
        score, else the record's own."""
        scored = self.scored
        units = len(table_for(self.rules).units)
        if scored is not None:
            reneged = sum(1 << unit for unit in scored.reneged)
            return list(scored.bids), list(scored.tricks), reneged
        given = self.given
        if isinstance(given, TallyGiven):
            return self.bids, list(given.tricks), 0
        reneged = sum(1 << unit for unit in given.reneged if 0 <= unit < units)
        return self.bids, self.tricks_counted(given), reneged

    def tricks_counted(self, given: HandGiven) -> list[int] | None:
        """The record's tricks per seat: ``tricks_won``, else its tricks' winners."""
        players = self.rules.players
        if given.tricks_won is not None:
            return given.tricks_won if len(given.tricks_won) == players else None
        winners = [trick.winner for trick in given.tricks]
        if len(winners) != table_for(self.rules).hand_size or None in winners:
            return None
        return [winners.count(seat) for seat in range(players)]

    def score_of(
        self, bids: list[Bid | None], tricks: list[int] | None, reneged: int
    ) -> HandScore | None:
        table = table_for(self.rules)
        if tricks is None or len(tricks) != table.players or sum(tricks) != table.hand_size:
            return None
        return score_hand(
            self.rules,
            bids,
            tricks,
            scores=self.start.scores,
            bags=self.start.bags,
            reneged=reneged,
        )

    def judge_score(self, score: HandScore) -> None:
        given = self.given
        if isinstance(given, HandGiven):
            self.judge_tricks_won(given)
        if given.points is None and given.scores is None and given.bags is None:
            return
        units = len(score.points)
        claimed = HandScored(
            given.hand,
            tuple(self.bids),
            (),
            tuple(given.points if given.points is not None else score.points)[:units],
            tuple(given.scores if given.scores is not None else score.scores)[:units],
            tuple(given.bags if given.bags is not None else score.bags)[:units],
        )
        finding = score_finding(
            self.version, given.hand, score, claimed, self.start.scores, self.start.bags
        )
        if finding is not None:
            self.found(finding.check, finding.detail, finding.rule, finding.arithmetic)

    def judge_tricks_won(self, given: HandGiven) -> None:
        scored = self.scored
        if scored is None or given.tricks_won is None:
            return
        if list(scored.tricks) != given.tricks_won:
            self.found(
                "replay",
                f"the record counts tricks {given.tricks_won}; the tricks played give "
                f"{list(scored.tricks)}",
                "the tricks won",
            )

    def verify_deal(self, dealt: HandDealt) -> bool:
        """A record with its seed and commitment: the seed must keep the promise."""
        given = self.given
        if isinstance(given, TallyGiven) or not (given.deal.seed and given.deal.commitment):
            return False
        entropies = self.entropy_bytes()
        promised = HandDealt(
            given.hand,
            given.dealer,
            given.deal.commitment,
            dealt.hands if dealt.hands else (),
            tuple(given.deal.deck) if given.deal.deck is not None else None,
        )
        findings = deal_findings(self.rules, entropies, promised, 0, given.deal.seed, 0)
        for problem in findings:
            self.found(problem.check, problem.detail, problem.rule)
        return not findings and entropies is not None

    def record(self, score: HandScore | None) -> HandRecord:
        """The hand as it was played (the replay's plays as far as they went, with the
        table's trick winners), in docs/api.md's shape."""
        given = self.given
        hands = self.dealt.hands if self.dealt is not None else ()
        if isinstance(given, TallyGiven):
            return HandRecord(
                hand=given.hand,
                dealer=given.dealer,
                deal=Deal(deck=None, hands=[], seed=None, commitment=None),
                draws=[],
                bids=self.bids,
                passes=[],
                tricks=[],
                tricks_won=list(given.tricks),
                points=list(score.points) if score else [],
                scores=list(score.scores) if score else [],
                bags=list(score.bags) if score else [],
            )
        kept = [[d.card for d in given.draws if d.seat == seat and d.kept] for seat in (0, 1)]
        return HandRecord(
            hand=given.hand,
            dealer=given.dealer,
            deal=Deal(
                deck=given.deal.deck,
                hands=[list(h) for h in hands] if any(hands) else kept,
                seed=given.deal.seed,
                commitment=given.deal.commitment,
            ),
            draws=given.draws,
            discards=given.discards,
            bids=self.bids,
            passes=given.passes,
            tricks=[_trick(self.rules, t) for t in given.tricks],
            tricks_won=list(self.scored.tricks) if self.scored else given.tricks_won or [],
            points=list(score.points) if score else [],
            scores=list(score.scores) if score else [],
            bags=list(score.bags) if score else [],
            reneged=given.reneged,
        )


def _trick(rules: Rules, trick: TrickGiven) -> Trick:
    """A trick of the record, its winner by the rules when the table did not say."""
    first = trick.cards[0].seat if trick.cards else -1
    leader = trick.leader if trick.leader is not None else first
    winner = trick.winner
    if winner is None and len(trick.cards) == rules.players:
        table = table_for(rules)
        winner = table.trick_winner(leader, tuple(p.card.ordinal for p in trick.cards))
    return Trick(leader, trick.cards, winner if winner is not None else -1)


def _drawn_text(drawn: Sequence[tuple[int, Card | None, bool]]) -> str:
    return ", ".join(
        f"seat {seat} {'keeps' if kept else 'discards'} {card}" for seat, card, kept in drawn
    )
