"""Audit by replay: every commit of a game decided again by the rules, from the first on.

Each accepted commit is the outcome of one command. The command is read back from its events
(:func:`recorded_command`), decided again with :func:`domain.game.decide` against the state
before it (a deal with the seed it recorded), and the events the rules give must be the events
recorded. So every play was legal when it was made, every trick went to the seat that won it,
every score is the rules' own and every deal is the one its seed gives. Each revealed seed must
also hash to the commitment published with its deal and derive its deck (:mod:`.deals`), and
the read models, when given, must show what the record shows (:mod:`.read_model_check`).

The replay follows the record: where the rules give other events than the record, the finding
is reported and the recorded events are applied, so later events are judged against the record
as it stands (a wrong trick is not reported again at every later trick; a changed total shows
again only where the next hand's totals no longer add up to it). Where the rules refuse the
recorded command outright, the hand is off the rules: its later commands are not decided again
(each would be refused in turn), but its score is still checked against its recorded bids and
tricks, and the next deal against its seed. Refused commands are recorded with their code only,
so all the audit can check of them is that they changed nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import get_args

from msgspec.structs import replace

from contracts.wire import Commit, ReplyCode, commit_seconds
from domain.cards import card_at
from domain.commands import (
    AnyCommand,
    ComeBack,
    CreateGame,
    DealHand,
    DiscardCards,
    Draw,
    LookAtHand,
    MarkAway,
    PassCards,
    PlaceBid,
    PlayCard,
    PlayerAction,
    RecordTally,
    ReissueSeatToken,
    TakeSeat,
    TimeOut,
)
from domain.deal_phase import entropies_of
from domain.errors import RuleViolation
from domain.events import (
    AnyEvent,
    BidPlaced,
    CardDrawn,
    CardPlayed,
    CardsDiscarded,
    CardsPassed,
    DuplicateBoards,
    GameCreated,
    GameEnded,
    HandDealt,
    HandLooked,
    HandScored,
    SeatAway,
    SeatReturned,
    SeatTaken,
    SeatTokenReissued,
    TimedOut,
    TrickWon,
)
from domain.game import decide, evolve
from domain.records import HandRecord, HandRecorder
from domain.rules import Rules
from domain.scoring import HandScore, score_hand
from domain.shuffle import DealSource, DealtHands, SeededDeal, StackedDeck, entropy_bytes
from domain.state import Game
from domain.timing import stamped
from services.audit.deals import deal_findings, seed_bytes
from services.audit.disputes import (
    arithmetic,
    deal_difference,
    difference_finding,
    event_text,
    refusal_finding,
    score_finding,
    tally_findings,
    trick_finding,
)
from services.audit.history import Problem, chain_problems
from services.audit.read_model_check import ReadModelsView, read_model_findings
from services.audit.report import (
    CHAIN_CHECKS,
    AuditReport,
    HandReport,
    in_record_order,
)
from services.runtime.game_stream import StoredCommit

REPLY_CODES = frozenset(get_args(ReplyCode))
UNFOLLOWABLE = (ValueError, TypeError, IndexError, KeyError, AttributeError, AssertionError)
"""What applying an event that cannot have happened may raise; the finding says where."""


@dataclass
class HandAccount:
    """What the replay learnt of one hand: enough to tell it to a person and to judge it."""

    number: int
    dealt: HandDealt
    dealt_at: int
    rules: Rules
    scored_at: int | None = None
    record: HandRecord | None = None
    score: HandScore | None = None
    """The rules' score of the hand's recorded bids and tricks."""
    start_scores: tuple[int, ...] = ()
    start_bags: tuple[int, ...] = ()
    deal_verified: bool = False

    def holds(self, version: int) -> bool:
        """Whether ``version`` is one of this hand's events, from its deal to its score."""
        last = self.scored_at if self.scored_at is not None else version
        return self.dealt_at <= version <= last

    @property
    def arithmetic(self) -> list[str]:
        if self.score is None:
            return []
        return arithmetic(self.score, self.start_scores, self.start_bags)


def hand_report(
    account: HandAccount, problems: list[Problem], *, followed: bool = True
) -> HandReport:
    """One hand of the audit: what was checked of it, and the problems found in it. ``followed``
    says whether the hand could be followed to its end at all."""
    mine = [problem for problem in problems if problem.hand == account.number]
    checks = {problem.check for problem in mine}
    return HandReport(
        hand=account.number,
        deal_verified=account.deal_verified and "deal" not in checks,
        replayed=followed and not checks & {"replay", "commit"},
        score_matches=account.score is not None and "score" not in checks,
        problems=mine,
        arithmetic=account.arithmetic,
    )


@dataclass
class Replay:
    """A game's commits replayed: what was found, and an account of every hand."""

    commits: Sequence[StoredCommit]
    problems: list[Problem] = field(default_factory=list)
    hands: list[HandAccount] = field(default_factory=list)
    state: Game | None = None
    events: int = 0

    def report(
        self, read_models: ReadModelsView | None = None, *, reveal_open_hand: bool = False
    ) -> AuditReport:
        """docs/api.md's audit. A hand still being played is not reported on (its deal cannot be
        checked before its seed is revealed); findings inside it are sealed, unless
        ``reveal_open_hand`` (the house's own tools, which may see every card)."""
        found = [*chain_problems(self.commits), *self.problems]
        if read_models is not None:
            finished = [(a.record, a.scored_at or 0) for a in self.hands if a.record is not None]
            found.extend(read_model_findings(read_models, self.state, finished, self.events))
        problems = in_record_order([self._placed(problem) for problem in found])
        if not reveal_open_hand:
            problems = [self._sealed(problem) for problem in problems]
        hands = [hand_report(a, problems) for a in self.hands if a.scored_at is not None]
        return AuditReport(
            ok=not problems,
            events=self.events,
            chain=not any(problem.check in CHAIN_CHECKS for problem in problems),
            hands=hands,
            problems=problems,
            first_problem=problems[0] if problems else None,
        )

    def _placed(self, problem: Problem) -> Problem:
        """The problem with the hand its version belongs to."""
        if problem.hand is not None:
            return problem
        for account in self.hands:
            if account.holds(problem.version):
                return replace(problem, hand=account.number)
        return problem

    def _sealed(self, problem: Problem) -> Problem:
        """A finding inside the hand still being played, told without the cards in play."""
        open_hand = self.hands[-1] if self.hands and self.hands[-1].scored_at is None else None
        if open_hand is None or problem.hand != open_hand.number or problem.check in CHAIN_CHECKS:
            return problem
        detail = (
            f"a {problem.check} problem at version {problem.version} of hand {problem.hand}, "
            "which is still being played; it is told in full once the hand is scored"
        )
        return replace(problem, detail=detail, arithmetic=[])


def audit_game(
    commits: Sequence[StoredCommit],
    read_models: ReadModelsView | None = None,
    *,
    reveal_open_hand: bool = False,
) -> AuditReport:
    """docs/api.md's audit of one game's stored commits, in stream order.

    ``read_models`` (the scoreboard and hand records as the API serves them) are compared with
    the replay when given. Pure: it reads nothing but its arguments.
    """
    return replay_game(commits).report(read_models, reveal_open_hand=reveal_open_hand)


def replay_game(commits: Sequence[StoredCommit]) -> Replay:
    """Replay a game's commits through the rules (see the module's docstring)."""
    replayer = _Replayer(commits)
    replayer.run()
    return replayer.replay


def recorded_command(
    events: Sequence[AnyEvent], deal: DealSource | None, at: float = 0.0
) -> AnyCommand | None:
    """The command whose outcome ``events`` are (a bid's commit may open with its look); None
    when no command has such an outcome. ``deal`` is the source of a deal the events record,
    ``at`` the commit's time (a timeout is decided at it)."""
    first = events[0]
    if isinstance(first, TimedOut):
        return TimeOut(first.seat, at, _actions_for(first.seat, events[1:], deal))
    if isinstance(first, SeatAway) and len(events) == 1:
        return MarkAway(first.seat)
    if isinstance(first, SeatReturned):
        if len(events) == 1:
            return ComeBack(first.seat)
        return recorded_command(events[1:], deal, at)  # the seat's own action brought it back
    if isinstance(first, GameCreated):
        return CreateGame(
            first.game_id,
            first.rules.to_json(),
            first.dealer,
            first.entropy,
            first.scores,
            first.bags,
            first.league,
            first.platform,
            first.visibility,
            first.seating,
            first.clock,
            first.duplicate if isinstance(first.duplicate, DuplicateBoards) else None,
        )
    bid = next((event for event in events if isinstance(event, BidPlaced)), None)
    if bid is not None:
        return PlaceBid(bid.seat, bid.bid)
    discard = next((event for event in events if isinstance(event, CardsDiscarded)), None)
    if discard is not None:  # it may open with the dealer's look
        return DiscardCards(discard.seat, discard.cards or ())
    if isinstance(first, SeatTaken):
        return TakeSeat(first.player, first.seat, first.entropy)
    if isinstance(first, SeatTokenReissued):
        return ReissueSeatToken(first.seat, first.player)
    if isinstance(first, CardPlayed):
        return PlayCard(first.seat, first.card)
    if isinstance(first, CardDrawn):
        return Draw(first.seat, first.kept)
    if isinstance(first, CardsPassed):
        return PassCards(first.seat, first.cards or ())
    if isinstance(first, HandLooked):
        return LookAtHand(first.seat)
    if isinstance(first, HandDealt) and deal is not None:
        return DealHand(deal)
    if isinstance(first, HandScored):
        return RecordTally(first.tricks)
    return None


def _actions_for(
    seat: int, events: Sequence[AnyEvent], deal: DealSource | None
) -> tuple[PlayerAction, ...]:
    """The actions a timeout's events record the service taking for ``seat`` (none for a
    forfeit): a look, when it opens them and a move follows, then the move."""
    rest = [event for event in events if not isinstance(event, SeatAway)]
    if not rest or isinstance(rest[0], GameEnded):
        return ()
    move = recorded_command(rest, deal)
    if not isinstance(move, (LookAtHand, PlaceBid, PlayCard, PassCards, DiscardCards, Draw)):
        return ()
    if isinstance(rest[0], HandLooked) and not isinstance(move, LookAtHand):
        return (LookAtHand(seat), move)
    return (move,)


def revealed_seeds(commits: Iterable[StoredCommit]) -> dict[int, str]:
    """Each scored hand's revealed seed, by hand number."""
    return {
        event.hand: event.seed
        for stored in commits
        for event in stored.commit.events
        if isinstance(event, HandScored) and event.seed is not None
    }


def deal_source(dealt: HandDealt, revealed: str | None) -> DealSource:
    """Where a recorded deal's cards came from: its seed (as the engine recorded it, else as
    revealed), else its deck, else its hands."""
    seed = seed_bytes(dealt.seed) or seed_bytes(revealed)
    if seed is not None:
        return SeededDeal(seed)
    if dealt.deck is not None:
        return StackedDeck(dealt.deck)
    return DealtHands(dealt.hands)


def _first_difference(decided: Sequence[AnyEvent], recorded: Sequence[AnyEvent]) -> int | None:
    for offset, (expected, found) in enumerate(zip_longest(decided, recorded)):
        if expected != found:
            return offset
    return None


class _Replayer:
    """Walks the commits once, keeping the state, the findings and the hands' accounts."""

    def __init__(self, commits: Sequence[StoredCommit]) -> None:
        self.replay = Replay(commits)
        self.seeds = revealed_seeds(commits)
        self.recorder = HandRecorder()
        self.derailed = False
        """The rules refused a command of the hand in play: its later commands are not decided."""
        self.stopped = False
        self.game_id: str | None = None
        self.at = 0.0
        """The time of the commit being replayed (seconds since the epoch)."""

    @property
    def state(self) -> Game | None:
        return self.replay.state

    def found(self, problem: Problem) -> None:
        self.replay.problems.append(problem)

    def run(self) -> None:
        if not self.replay.commits:
            self.found(Problem(0, "commit", "the record holds no commit"))
        for stored in self.replay.commits:
            if self.stopped:
                return
            self.commit(stored.commit)

    def commit(self, commit: Commit) -> None:
        first = commit.first_version
        if self.game_id is None:
            self.game_id = commit.game_id
        elif commit.game_id != self.game_id:
            detail = f"a commit of game {commit.game_id} in the record of game {self.game_id}"
            self.found(Problem(first, "commit", detail, "one game per record"))
        if commit.refusal is not None:
            self.refused(commit)
            if not commit.events:
                return
        elif not commit.events:
            self.found(Problem(first, "commit", "an accepted command with no events"))
            return
        self.replay.events += len(commit.events)
        before = self.state
        self.at = _seconds(commit.time)
        self.follow(first, commit.events)
        after = self.state
        if after is not None and after.timing is not None and not self.stopped:
            self.replay.state = stamped(before, commit.events, after, self.at)

    def refused(self, commit: Commit) -> None:
        """A refusal keeps only its code: check that it changed nothing."""
        assert commit.refusal is not None
        first = commit.first_version
        if commit.events:
            detail = f"a refused command ({commit.refusal.code}) recorded events"
            self.found(Problem(first, "commit", detail, "a refusal changes nothing"))
        if commit.refusal.code not in REPLY_CODES:
            detail = f"a refusal with the unknown code {commit.refusal.code!r}"
            self.found(Problem(first, "commit", detail, "docs/rules.md error codes"))

    def follow(self, first: int, events: Sequence[AnyEvent]) -> None:
        """Decide the commit's command again and compare, then apply the recorded events."""
        if self.derailed:
            self.apply_all(first, events, checked=0)
            return
        dealt = next((event for event in events if isinstance(event, HandDealt)), None)
        source = deal_source(dealt, self.seeds.get(dealt.hand)) if dealt else None
        command = recorded_command(events, source, self.at)
        if command is None:
            detail = f"{event_text(events[0])} is not the outcome of any command"
            self.found(Problem(first, "commit", detail))
            self.apply_all(first, events, checked=0)
            return
        try:
            decided = decide(self.state, command, deal=source)
        except RuleViolation as refusal:
            self.found(refusal_finding(first, command, refusal))
            self.derailed = True
            self.apply_all(first, events, checked=0)
            return
        self.compare(first, command, decided, events)

    def compare(
        self,
        first: int,
        command: AnyCommand,
        decided: Sequence[AnyEvent],
        events: Sequence[AnyEvent],
    ) -> None:
        at = _first_difference(decided, events)
        if at is None:
            self.apply_all(first, events, checked=len(events))
            return
        expected = decided[at] if at < len(decided) else None
        found = events[at] if at < len(events) else None
        if type(expected) is type(found) and isinstance(found, (HandScored, HandDealt)):
            before = len(self.replay.problems)
            self.apply_all(first, events, checked=at)  # their own checks tell what differs
            if len(self.replay.problems) == before:
                self.found(difference_finding(first + at, expected, found))
            return
        version = first + min(at, len(events) - 1)
        self.found(self.difference(version, command, expected, found))
        self.apply_all(first, events, checked=at + 1)

    def difference(
        self, version: int, command: AnyCommand, expected: AnyEvent | None, found: AnyEvent | None
    ) -> Problem:
        hand = self.state.hand if self.state is not None else None
        if (
            isinstance(expected, TrickWon)
            and isinstance(found, TrickWon)
            and isinstance(command, PlayCard)
            and hand is not None
            and self.state is not None
        ):
            cards = [*(card_at(index) for index in hand.trick), command.card]
            return trick_finding(
                version,
                self.state.rules,
                found.trick,
                hand.leader,
                cards,
                expected.seat,
                found.seat,
            )
        return difference_finding(version, expected, found)

    def apply_all(self, first: int, events: Sequence[AnyEvent], checked: int) -> None:
        """Apply the recorded events; those from ``checked`` on were not confirmed by the
        rules' decision, so a score or a deal among them is checked on its own."""
        for offset, event in enumerate(events):
            if self.stopped:
                return
            self.apply(first + offset, event, standalone=offset >= checked)

    def apply(self, version: int, event: AnyEvent, *, standalone: bool) -> None:
        if isinstance(event, HandScored):
            self.scored(version, event, standalone=standalone)
        elif isinstance(event, HandDealt):
            self.dealt(version, event, standalone=standalone)
        try:
            self.replay.state = evolve(self.state, event)
            record = self.recorder.feed(event)
        except UNFOLLOWABLE as error:
            detail = (
                f"the record cannot be followed past {event_text(event)}: it cannot have "
                f"happened here ({type(error).__name__})"
            )
            self.found(Problem(version, "replay", detail))
            self.stopped = True
            return
        if record is not None and self.replay.hands:
            self.replay.hands[-1].record = record

    def dealt(self, version: int, event: HandDealt, *, standalone: bool) -> None:
        if standalone:
            self.check_deal(version, event)
        self.derailed = False
        rules = self.state.rules if self.state is not None else None
        if rules is not None:
            self.replay.hands.append(HandAccount(event.hand, event, version, rules))

    def check_deal(self, version: int, event: HandDealt) -> None:
        """A deal not confirmed with its command: deal it again from its source."""
        source = deal_source(event, self.seeds.get(event.hand))
        try:
            decided = decide(self.state, DealHand(source))
        except RuleViolation as refusal:
            detail = f"a hand is dealt where the rules deal none ({refusal.code}: {refusal.detail})"
            self.found(Problem(version, "replay", detail, refusal.code))
            return
        expected = decided[0]
        assert isinstance(expected, HandDealt)
        finding = deal_difference(version, expected, event)
        if finding is not None:
            self.found(finding)

    def scored(self, version: int, event: HandScored, *, standalone: bool) -> None:
        state = self.state
        account = self.replay.hands[-1] if self.replay.hands else None
        if state is None or account is None or account.scored_at is not None:
            if standalone:
                detail = f"{event_text(event)} scores no hand in play"
                self.found(Problem(version, "replay", detail))
            return
        account.scored_at = version
        account.start_scores, account.start_bags = state.scores, state.bags
        self.verify_deal(version, event, account, state)
        score = self.score(version, event, state)
        account.score = score
        if standalone:
            self.check_score(version, event, state, score)

    def score(self, version: int, event: HandScored, state: Game) -> HandScore | None:
        """The rules' score of the bids and tricks the score names."""
        players = state.rules.players
        units = len(state.scores)
        if len(event.bids) != players or len(event.tricks) != players:
            detail = f"{event_text(event)} does not give one bid and one trick count per seat"
            self.found(Problem(version, "score", detail))
            return None
        reneged = sum(1 << unit for unit in event.reneged if 0 <= unit < units)
        return score_hand(
            state.rules,
            event.bids,
            event.tricks,
            scores=state.scores,
            bags=state.bags,
            reneged=reneged,
        )

    def check_score(
        self, version: int, event: HandScored, state: Game, score: HandScore | None
    ) -> None:
        """A score not confirmed with its command: against the hand's events and the rules."""
        hand = state.hand
        if hand is not None:
            if event.hand != hand.number:
                detail = f"hand {hand.number} is scored as hand {event.hand}"
                self.found(Problem(version, "replay", detail, "hands are numbered from 1"))
            bids = list(hand.bids)
            units = len(state.scores)
            reneged = [unit for unit in range(units) if hand.reneged >> unit & 1]
            for problem in tally_findings(version, event, bids, hand.won, reneged):
                self.found(problem)
            if state.duplicate is not None:
                if event.seed is not None:
                    detail = (
                        f"hand {hand.number} revealed its board's seed with its score, before "
                        f"every table of the round had played the board"
                    )
                    rule = "a duplicate event's boards are revealed by its league"
                    self.found(Problem(version, "deal", detail, rule))
            elif hand.seed is not None and event.seed != hand.seed:
                detail = f"the seed revealed for hand {hand.number} is not the seed it was dealt"
                self.found(Problem(version, "deal", detail, "the seed is revealed with the score"))
        if score is not None:
            finding = score_finding(version, event.hand, score, event, state.scores, state.bags)
            if finding is not None:
                self.found(finding)

    def verify_deal(
        self, version: int, event: HandScored, account: HandAccount, state: Game
    ) -> None:
        """The public check: the revealed seed keeps the promise published with the deal."""
        duplicate = state.duplicate
        findings = deal_findings(
            state.rules,
            _entropies(state),
            account.dealt,
            account.dealt_at,
            # a duplicate table's seed is its board's, revealed by the league when every
            # table is over: the replay, which reads the whole history, checks the one dealt
            event.seed if duplicate is None else account.dealt.seed,
            version,
            board=None if duplicate is None else duplicate.first + account.dealt.hand - 1,
        )
        for problem in findings:
            self.found(problem)
        account.deal_verified = not findings


def _seconds(time: str) -> float:
    """A commit's time; an unreadable one reads as the epoch (the chain check reports it)."""
    try:
        return commit_seconds(time)
    except ValueError:
        return 0.0


def _entropies(state: Game) -> list[bytes] | None:
    """The game's and each seat's entropy, as the shuffle takes them; None if not hex."""
    try:
        return entropy_bytes(entropies_of(state))
    except ValueError:
        return None
