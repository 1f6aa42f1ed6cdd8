"""One hand told in a terminal (rich), so a person can follow it without the tool.

In the order it happened: the hands as dealt, the draws (two players), the dealer's discard,
the bids and each unit's contract, the blind nil passes, every trick with its leader, its cards
and its winner (with two decks, the copy that won) and the running count of tricks against each
bid, then the score line by line, each line naming the option of docs/rules.md that decided it, and
what the audit found in the hand.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from domain.bids import Bid, is_nil, tricks_bid
from domain.cards import Card
from domain.records import HandRecord
from domain.table import Table as SeatsAndPack
from domain.table import table_for
from services.audit.history import Problem
from services.audit.replay import HandAccount
from services.audit.report import AuditReport

SUIT_SYMBOLS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
RED_SUITS = frozenset("HD")
HOLDING_ORDER = "SHDC"
"""A hand is shown as a player sorts it: trumps first."""


TIMED_OUT = "⏱"
"""The mark of a move the service made for a seat whose clock ran out."""


def card_text(card: Card, *, strong: bool = False) -> Text:
    """``Q♥`` (hearts and diamonds in red), ``10♠``, ``BJ``; ``strong`` for the card that won."""
    style = "bold" if strong else ""
    if card.is_joker:
        return Text(card.value, style=style or "magenta")
    rank = "10" if card.rank == "T" else card.rank
    colour = "red" if card.suit in RED_SUITS else ""
    return Text(f"{rank}{SUIT_SYMBOLS[card.suit]}", style=f"{colour} {style}".strip())


def holding_text(cards: Sequence[Card]) -> Text:
    """A hand by suit, high cards first, jokers with the trumps."""
    order = {rank: position for position, rank in enumerate("AKQJT98765432")}
    groups: list[Text] = []
    for suit in HOLDING_ORDER:
        held = [c for c in cards if c.suit == suit or (suit == "S" and c.is_joker)]
        held.sort(key=lambda c: (not c.is_joker, order.get(c.rank, -1), c.value))
        if held:
            groups.append(Text(" ").join(card_text(card) for card in held))
    return Text("   ").join(groups) if groups else Text("—", style="dim")


def bid_text(bid: Bid | None) -> str:
    """``nil``, ``blind nil``, ``blind 6``, ``3``; ``-`` for no bid (a hand without bidding)."""
    if bid is None:
        return "-"
    return str(bid).replace("_", " ")


def tell_hand(account: HandAccount, problems: Sequence[Problem] = ()) -> RenderableType:
    """The whole hand, in the order it happened."""
    record = account.record
    if record is None:
        return Text(f"Hand {account.number} has no record: it was not finished.", style="yellow")
    table = table_for(account.rules)
    parts: list[RenderableType] = [_dealt(record, table)]
    if record.draws:
        parts.append(_draws(record))
    if record.discards:
        parts.append(_discards(record))
    parts.append(_bids(record, table))
    if record.passes:
        parts.append(_passes(record))
    parts.append(_tricks(record, table))
    if record.timed_out:
        parts.append(_timed_out(record))
    parts.append(_score(account))
    if problems:
        parts.append(_findings(problems))
    title = (
        f"Hand {record.hand} · dealer seat {record.dealer} · {account.rules.preset}, "
        f"{table.players} players, {table.hand_size} tricks"
    )
    return Group(Rule(title, align="left"), *parts)


def _seat_label(table: SeatsAndPack, seat: int) -> str:
    if table.rules.partnerships:
        return f"seat {seat} (unit {table.unit_of[seat]})"
    return f"seat {seat}"


def _section(heading: str, body: RenderableType) -> RenderableType:
    return Group(Text(heading, style="bold underline"), body)


def _dealt(record: HandRecord, table: SeatsAndPack) -> RenderableType:
    heading = "The hands kept in the draw" if record.draws else "The hands as dealt"
    grid = Table(show_header=False, box=None)
    for seat, cards in enumerate(record.deal.hands):
        grid.add_row(_seat_label(table, seat), holding_text(cards))
    # Folded, never cut: a seed or commitment is checked character for character.
    if record.deal.commitment:
        grid.add_row("commitment", Text(record.deal.commitment, style="dim", overflow="fold"))
    if record.deal.seed:
        grid.add_row("seed", Text(record.deal.seed, style="dim", overflow="fold"))
    return _section(heading, grid)


def _draws(record: HandRecord) -> RenderableType:
    grid = Table()
    for name in ("turn", "seat", "first card", "second card"):
        grid.add_column(name)
    pairs = zip(record.draws[0::2], record.draws[1::2], strict=False)
    for turn, (seen, other) in enumerate(pairs, start=1):
        first, second = _drawn(seen.card, seen.kept), _drawn(other.card, other.kept)
        grid.add_row(str(turn), str(seen.seat), first, second)
    return _section("The draw", grid)


def _discards(record: HandRecord) -> RenderableType:
    grid = Table(show_header=False, box=None)
    for discarded in record.discards:
        cards = Text(" ").join(card_text(card) for card in discarded.cards)
        grid.add_row(f"seat {discarded.seat}", cards)
    return _section("The dealer's discard, face down and out of play", grid)


def _drawn(card: Card, kept: bool) -> Text:
    return Text.assemble(card_text(card), " kept" if kept else " discarded")


def _bids(record: HandRecord, table: SeatsAndPack) -> RenderableType:
    if all(bid is None for bid in record.bids):
        return _section(
            "No bidding: the game's first hand (first_hand: no_bid), 10 a trick",
            Text("-", style="dim"),
        )
    grid = Table()
    grid.add_column("seat")
    grid.add_column("bid")
    players = table.players
    auto = {moved.seat for moved in record.timed_out if moved.move == "bid"}
    for k in range(players):
        seat = (record.dealer + 1 + k) % players
        bid = bid_text(record.bids[seat]) + (f" {TIMED_OUT}" if seat in auto else "")
        grid.add_row(_seat_label(table, seat), bid)
    for unit, seats in enumerate(table.units):
        if len(seats) > 1:
            contract = sum(tricks_bid(record.bids[seat]) for seat in seats)
            grid.add_row(f"unit {unit} contract", str(contract), style="dim")
    return _section("The bids, from the left of the dealer", grid)


def _passes(record: HandRecord) -> RenderableType:
    grid = Table()
    grid.add_column("from")
    grid.add_column("to")
    grid.add_column("cards")
    for sent in record.passes:
        cards = Text(" ").join(card_text(card) for card in sent.cards)
        grid.add_row(str(sent.from_seat), str(sent.to), cards)
    return _section("The blind nil passes", grid)


def _tricks(record: HandRecord, table: SeatsAndPack) -> RenderableType:
    """Each trick, its winning card in bold, and the count so far against each bid (and
    against each team's contract in a partnership)."""
    grid = Table(box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, collapse_padding=True)
    grid.add_column("#", justify="right")
    grid.add_column("led")
    grid.add_column("cards, in play order", no_wrap=True)
    grid.add_column("won")
    for seat, bid in enumerate(record.bids):
        grid.add_column(f"s{seat}/{bid_text(bid)}", justify="right", no_wrap=True)
    teams = table.units if table.rules.partnerships else ()
    for unit, members in enumerate(teams):
        contract = sum(tricks_bid(record.bids[seat]) for seat in members)
        grid.add_column(f"u{unit}/{contract}", justify="right", no_wrap=True)
    won = [0] * table.players
    auto = {(m.trick, m.seat) for m in record.timed_out if m.move == "play"}
    for number, trick in enumerate(record.tricks, start=1):
        cards = Text(" ").join(
            Text.assemble(
                f"{p.seat}:",
                card_text(p.card, strong=p.seat == trick.winner),
                TIMED_OUT if (number, p.seat) in auto else "",
            )
            for p in trick.cards
        )
        if 0 <= trick.winner < table.players:
            won[trick.winner] += 1
        counts = [str(count) for count in won]
        counts.extend(_contract_count(record, table, members, won) for members in teams)
        grid.add_row(str(number), str(trick.leader), cards, str(trick.winner), *counts)
    legend = "sN/bid: tricks won so far by seat N against its bid"
    if auto:
        legend += f"; {TIMED_OUT}: played by the service when the seat's clock ran out"
    if teams:
        legend += "; uN/contract: by unit N toward its contract"
    if table.rules.decks > 1:
        legend += "; of two identical cards the one played later wins, and is the one in bold"
    return _section(f"The tricks ({legend})", grid)


def _timed_out(record: HandRecord) -> RenderableType:
    grid = Table()
    for name in ("seat", "move", "trick"):
        grid.add_column(name)
    for moved in record.timed_out:
        grid.add_row(str(moved.seat), moved.move, str(moved.trick or ""))
    heading = f"Timed out ({TIMED_OUT}): moves the service made, not the player's"
    return _section(heading, grid)


def _contract_count(
    record: HandRecord, table: SeatsAndPack, members: Sequence[int], won: Sequence[int]
) -> str:
    """A team's tricks that count toward its contract: a nil bidder's tricks count only
    under ``failed_nil_tricks: partner``."""
    counting = [
        seat
        for seat in members
        if not is_nil(record.bids[seat]) or table.rules.failed_nil_tricks == "partner"
    ]
    return str(sum(won[seat] for seat in counting))


def _score(account: HandAccount) -> RenderableType:
    lines = account.arithmetic
    if not lines:
        return Text("No score: the hand was not scored by the rules.", style="yellow")
    body = Text("\n").join(Text(line) for line in lines)
    return _section("The score, by the rules, line by line", body)


def _findings(problems: Sequence[Problem], title: str = "What the audit found") -> RenderableType:
    grid = Table(show_lines=True)
    for name in ("version", "check", "what", "decided by"):
        grid.add_column(name)
    for problem in problems:
        what = Text(problem.detail)
        for line in problem.arithmetic:
            what.append(f"\n  {line}", style="dim")
        grid.add_row(str(problem.version), problem.check, what, problem.rule or "", style="red")
    return _section(title, grid)


def tell_report(report: AuditReport, subject: str) -> RenderableType:
    """The audit at a glance: the chain, each hand's three checks, the first problem."""
    verdict = (
        Text("clean", style="bold green") if report.ok else Text("problems found", style="bold red")
    )
    head = Text.assemble(f"Audit of {subject}: ", verdict, f" · {report.events} events · chain ")
    head.append("intact" if report.chain else "broken", style="green" if report.chain else "red")
    grid = Table()
    for name in ("hand", "deal verified", "replayed", "score matches", "problems"):
        grid.add_column(name)
    for hand in report.hands:
        grid.add_row(
            str(hand.hand),
            _mark(hand.deal_verified),
            _mark(hand.replayed),
            _mark(hand.score_matches),
            str(len(hand.problems)),
        )
    parts: list[RenderableType] = [head, grid]
    first = report.first_problem
    if first is not None:
        parts.append(_findings([first], title="First problem"))
        if len(report.problems) > 1:
            parts.append(Text(f"... and {len(report.problems) - 1} more (see --json)", style="dim"))
    return Group(*parts)


def _mark(value: bool) -> Text:
    return Text("yes", style="green") if value else Text("no", style="red")
