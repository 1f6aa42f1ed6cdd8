"""The game aggregate: ``decide`` what a command does, ``evolve`` the state by an event.

``decide(state, command, deal=...) -> list[Event]`` checks a command against the state and
returns the events it causes, or raises :class:`~domain.errors.RuleViolation` with one
FORMAT.md code, chosen by FORMAT.md's precedence. ``evolve(state, event) -> state`` applies one
event and never fails on a valid history. :func:`legal_actions` lists every action a seat may
send; validation and that list share the same checks.

The randomness of a deal is an input: a command that completes a hand (or fills the last seat)
deals the next one from ``deal`` when it is given, and otherwise leaves the game waiting for a
:class:`~domain.commands.DealHand`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import msgspec
from msgspec.structs import replace

from domain.bids import BLIND_NIL, NIL, Bid, is_nil, tricks_bid
from domain.cards import CARDS, CLUBS, Card, cards_in, iter_cards, lowest
from domain.commands import (
    AnyCommand,
    CreateGame,
    DealHand,
    Draw,
    LookAtHand,
    PassCards,
    PlaceBid,
    PlayCard,
    RecordTally,
    TakeSeat,
    Unreadable,
)
from domain.dealing import (
    DealSource,
    DealtHands,
    SeededDeal,
    StackedDeck,
    commitment,
    cut_for_dealer,
    deal_out,
    shuffle,
)
from domain.errors import RuleViolation
from domain.events import (
    AnyEvent,
    BidPlaced,
    CardDrawn,
    CardPlayed,
    CardsPassed,
    CardsReceived,
    GameCreated,
    GameEnded,
    HandDealt,
    HandLooked,
    HandScored,
    SeatTaken,
    TrickWon,
)
from domain.rules import Rules, resolve_rules
from domain.scoring import score_hand
from domain.state import HELD, LANE, NO_SEAT, Game, Hand, Player, held, holdings_of
from domain.table import TRUMP, Table, table_for

MAX_NAME = 64
MAX_ENTROPY_HEX = 256


# --------------------------------------------------------------------------- decide


def decide(
    state: Game | None, command: AnyCommand, *, deal: DealSource | None = None
) -> list[AnyEvent]:
    """The events ``command`` causes in ``state``; raises RuleViolation when it is refused."""
    if type(command) is PlayCard and state is not None and state.status == "playing":
        return _play(state, command, deal)  # the hottest path, first
    if isinstance(command, CreateGame):
        if state is not None:
            raise RuleViolation("wrong_phase", f"game {state.game_id} already exists")
        return [_create(command)]
    if state is None:
        raise RuleViolation("wrong_phase", "no such game")
    if state.status == "finished":
        raise RuleViolation("game_over", "the game has ended")
    if isinstance(command, PlayCard):
        return _play(state, command, deal)
    if isinstance(command, PlaceBid):
        return _bid(state, command, deal)
    if isinstance(command, LookAtHand):
        return _look(state, command)
    if isinstance(command, Draw):
        return _draw(state, command)
    if isinstance(command, PassCards):
        return _pass(state, command)
    if isinstance(command, Unreadable):
        raise RuleViolation("malformed", command.reason)
    if isinstance(command, TakeSeat):
        return _take_seat(state, command, deal)
    if isinstance(command, DealHand):
        if state.status != "playing" or state.hand is not None:
            raise RuleViolation("wrong_phase", "a hand is not due to be dealt")
        return [_deal(state, command.source)]
    if isinstance(command, RecordTally):
        return _tally(state, command, deal)
    raise RuleViolation("malformed", f"unknown command {type(command).__name__}")


def _check_entropy(entropy: str) -> None:
    if len(entropy) > MAX_ENTROPY_HEX:
        raise RuleViolation("malformed", f"entropy is at most {MAX_ENTROPY_HEX} hex digits")
    try:
        bytes.fromhex(entropy)
    except ValueError:
        raise RuleViolation("malformed", f"entropy {entropy!r} is not hex") from None


def _create(command: CreateGame) -> GameCreated:
    rules = resolve_rules(command.rules)
    table = table_for(rules)
    units = len(table.units)
    if command.dealer is not None and not 0 <= command.dealer < rules.players:
        raise RuleViolation("malformed", f"dealer {command.dealer} is not a seat")
    for name in ("scores", "bags"):
        given = getattr(command, name)
        if given is not None and len(given) != units:
            raise RuleViolation("malformed", f"{name} needs one value per unit ({units})")
    if command.bags is not None and any(count < 0 for count in command.bags):
        raise RuleViolation("malformed", "bags cannot be negative")
    if not command.game_id or len(command.game_id) > 128:
        raise RuleViolation("malformed", "a game id is 1 to 128 characters")
    if command.league is not None and not 1 <= len(command.league) <= MAX_NAME:
        raise RuleViolation("malformed", f"a league name is 1 to {MAX_NAME} characters")
    _check_entropy(command.entropy)
    return GameCreated(
        game_id=command.game_id,
        rules=rules,
        dealer=command.dealer,
        entropy=command.entropy,
        scores=command.scores,
        bags=command.bags,
        league=command.league,
    )


def _seat_of(state: Game, seat: int) -> int:
    if not 0 <= seat < state.rules.players:
        raise RuleViolation("malformed", f"seat {seat} is not a seat at this table")
    return seat


def _take_seat(state: Game, command: TakeSeat, deal: DealSource | None) -> list[AnyEvent]:
    if not command.player or len(command.player) > MAX_NAME or not command.player.isprintable():
        raise RuleViolation("malformed", f"a player's name is 1 to {MAX_NAME} printable characters")
    _check_entropy(command.entropy)
    free = [seat for seat, player in enumerate(state.players) if player is None]
    if command.seat is None:
        if not free:
            raise RuleViolation("seat_taken", "every seat is taken")
        seat = free[0]
    else:
        seat = _seat_of(state, command.seat)
        if seat not in free:
            raise RuleViolation("seat_taken", f"seat {seat} is taken")
    events: list[AnyEvent] = [SeatTaken(seat, command.player, command.entropy)]
    if len(free) == 1 and deal is not None:
        seated = evolve(state, events[0])
        events.append(_deal(seated, deal))
    return events


def _entropies(state: Game) -> list[bytes]:
    return [bytes.fromhex(state.entropy)] + [
        bytes.fromhex(player.entropy) if player else b"" for player in state.players
    ]


def _deal(state: Game, source: DealSource) -> HandDealt:
    """Deal the next hand from ``source``."""
    rules = state.rules
    table = table_for(rules)
    number = state.hands_played + 1
    previous = state.hands_played + (state.first_dealer or 0)
    dealer = previous % rules.players
    seed_hex: str | None = None
    promise: str | None = None
    deck: tuple[Card, ...] | None = None
    if isinstance(source, SeededDeal):
        deck = shuffle(source.seed, _entropies(state), number, table.pack)
        seed_hex, promise = source.seed.hex(), commitment(source.seed)
        if state.first_dealer is None:
            dealer = (cut_for_dealer(deck, rules.players) + state.hands_played) % rules.players
    elif isinstance(source, StackedDeck):
        deck = check_deck(table, source.deck)
    if isinstance(source, DealtHands):
        hands = check_hands(table, source.hands)
    elif rules.deal == "draw":
        hands = tuple(() for _ in range(rules.players))
    else:
        assert deck is not None
        hands = deal_out(deck, rules.players, dealer, table.hand_size)
    return HandDealt(number, dealer, promise, hands, deck, seed_hex)


def check_deck(table: Table, deck: Sequence[Card]) -> tuple[Card, ...]:
    """A deck must hold every card of the pack exactly once."""
    if sorted(card.ordinal for card in deck) != [card.ordinal for card in table.pack]:
        raise RuleViolation("malformed", "a deck must hold every card of the pack exactly once")
    return tuple(deck)


def check_hands(table: Table, hands: Sequence[Sequence[Card]]) -> tuple[tuple[Card, ...], ...]:
    """Hands must be one per seat, of the hand size, every card of the pack at most once."""
    if len(hands) != table.players:
        raise RuleViolation("malformed", f"a deal needs {table.players} hands")
    seen = 0
    for seat, hand in enumerate(hands):
        if len(hand) != table.hand_size:
            raise RuleViolation(
                "malformed", f"hand {seat} holds {len(hand)} cards, not {table.hand_size}"
            )
        for card in hand:
            if not card.bit & table.pack_mask:
                raise RuleViolation("malformed", f"{card} is not in this pack")
            if seen & card.bit:
                raise RuleViolation("malformed", f"{card} is dealt twice")
            seen |= card.bit
    return tuple(tuple(hand) for hand in hands)


def _hand(state: Game) -> Hand:
    if state.hand is None:
        raise RuleViolation("wrong_phase", "no hand is being played")
    return state.hand


def _look(state: Game, command: LookAtHand) -> list[AnyEvent]:
    seat = _seat_of(state, command.seat)
    hand = _hand(state)
    if hand.looked >> seat & 1:
        return []
    return [HandLooked(seat, tuple(cards_in(held(hand, seat))))]


def _draw(state: Game, command: Draw) -> list[AnyEvent]:
    seat = _seat_of(state, command.seat)
    hand = _hand(state)
    if hand.phase != "draw":
        raise RuleViolation("wrong_phase", "the draw is over")
    if seat != hand.turn:
        raise RuleViolation("not_your_turn", f"seat {hand.turn} draws now")
    top, following = hand.pile[hand.drawn], hand.pile[hand.drawn + 1]
    return [CardDrawn(seat, top, command.keep), CardDrawn(seat, following, not command.keep)]


def _blind_nil_refusal(state: Game, hand: Hand, seat: int) -> str | None:
    """Why this seat may not bid blind nil now, or None when it may."""
    rules = state.rules
    if not rules.blind_nil:
        return "blind nil is not played at this table"
    if hand.looked >> seat & 1:
        return f"seat {seat} has already seen its cards"
    if rules.blind_nil_behind is not None:
        table = table_for(rules)
        unit = table.unit_of[seat]
        best_other = max(score for u, score in enumerate(state.scores) if u != unit)
        if state.scores[unit] > best_other - rules.blind_nil_behind:
            return f"blind nil needs the bidder's side {rules.blind_nil_behind} or more behind"
    return None


def _team_floor(rules: Rules, hand: Hand, seat: int) -> int:
    """The least this seat's bid must add for its team to reach ``team_min_bid``."""
    if not rules.team_min_bid or not rules.partnerships:
        return 0
    partner = table_for(rules).partner_of(seat)
    partner_bid = None if partner is None else hand.bids[partner]
    if partner_bid is None:
        return 0
    return rules.team_min_bid - tricks_bid(partner_bid)


def _bid_refusal(state: Game, hand: Hand, seat: int, bid: Bid) -> RuleViolation | None:
    """The refusal of a bid by the seat on turn, in FORMAT.md's order, or None."""
    rules = state.rules
    if bid == BLIND_NIL:
        why = _blind_nil_refusal(state, hand, seat)
        if why is not None:
            return RuleViolation("blind_nil_not_allowed", why)
    if is_nil(bid):
        if not rules.nil:
            return RuleViolation("nil_not_allowed", "nil is not played at this table")
    else:
        top = table_for(rules).hand_size
        if not rules.min_bid <= tricks_bid(bid) <= top:
            return RuleViolation("invalid_bid", f"a bid is {rules.min_bid} to {top}, not {bid}")
    floor = _team_floor(rules, hand, seat)
    if tricks_bid(bid) < floor:
        return RuleViolation(
            "invalid_bid",
            f"the team must bid {rules.team_min_bid} together: this bid must be {floor} or more",
        )
    return None


def _bid(state: Game, command: PlaceBid, deal: DealSource | None) -> list[AnyEvent]:
    seat = _seat_of(state, command.seat)
    hand = _hand(state)
    if hand.phase != "bid":
        raise RuleViolation("wrong_phase", "bidding is over" if hand.bids[seat] else "not bidding")
    if seat != hand.turn:
        raise RuleViolation("not_your_turn", f"seat {hand.turn} bids now")
    refusal = _bid_refusal(state, hand, seat, command.bid)
    if refusal is not None:
        raise refusal
    placed = BidPlaced(seat, command.bid)
    if hand.looked >> seat & 1:
        return [placed]
    look = HandLooked(seat, tuple(cards_in(held(hand, seat))))
    return [placed, look] if command.bid == BLIND_NIL else [look, placed]


def _pass(state: Game, command: PassCards) -> list[AnyEvent]:
    seat = _seat_of(state, command.seat)
    hand = _hand(state)
    if hand.phase != "pass":
        raise RuleViolation("wrong_phase", "no pass now")
    if not hand.passes_due >> seat & 1:
        raise RuleViolation("invalid_pass", f"seat {seat} has no pass due")
    count = state.rules.blind_nil_pass
    cards = command.cards
    mask = 0
    for card in cards:
        mask |= card.bit
    if len(cards) != count or mask.bit_count() != count:
        raise RuleViolation("invalid_pass", f"a pass is {count} different cards")
    if mask & ~held(hand, seat):
        raise RuleViolation("invalid_pass", "a passed card is not in the hand")
    partner = table_for(state.rules).partner_of(seat)
    assert partner is not None
    events: list[AnyEvent] = [CardsPassed(seat, partner, cards)]
    partner_cards = hand.passed[partner]
    if partner_cards is not None:
        events.append(CardsReceived(partner, seat, cards))
        events.append(CardsReceived(seat, partner, partner_cards))
    return events


def _current_winner(table: Table, trick: tuple[int, ...]) -> int:
    """The card index now winning an unfinished trick."""
    return trick[table.winning_position(trick)]


def _beaters(table: Table, allowed: int, winning: int) -> int:
    """The cards of ``allowed`` that would take the trick from ``winning``."""
    out = 0
    for card in iter_cards(allowed):
        if table.beats(card, winning):
            out |= 1 << card
    return out


def _play(state: Game, command: PlayCard, deal: DealSource | None) -> list[AnyEvent]:
    seat = command.seat
    rules = state.rules
    if not 0 <= seat < rules.players:
        raise RuleViolation("malformed", f"seat {seat} is not a seat at this table")
    hand = state.hand
    if hand is None or hand.phase != "play":
        raise RuleViolation("wrong_phase", "cards are not being played now")
    if seat != hand.turn:
        raise RuleViolation("not_your_turn", f"seat {hand.turn} plays now")
    card = command.card
    hold = hand.holdings >> LANE * seat & HELD
    if not hold & card.bit:
        raise RuleViolation("card_not_in_hand", f"{card} is not in seat {seat}'s hand")
    table = table_for(rules)
    index = card.ordinal
    trick = hand.trick
    renege = False
    if not trick:
        if hand.opening_card >= 0 and hand.tricks_played == 0 and index != hand.opening_card:
            raise RuleViolation(
                "wrong_opening_lead", f"the hand opens with {CARDS[hand.opening_card]}"
            )
        if (
            table.suit_of[index] == TRUMP
            and not hand.spades_broken
            and rules.spades_lead == "broken"
            and hold & ~table.suit_mask[TRUMP]
        ):
            raise RuleViolation("spades_not_broken", f"{card} leads a spade before they broke")
    else:
        led = table.suit_of[trick[0]]
        follow = hold & table.suit_mask[led]
        if follow and table.suit_of[index] != led:
            if rules.renege == "reject":
                raise RuleViolation("must_follow_suit", f"{card} does not follow the suit led")
            renege = True
        if rules.must_beat and not renege:
            beaters = _beaters(table, follow or hold, _current_winner(table, trick))
            if beaters and not beaters & card.bit:
                if rules.renege == "reject":
                    raise RuleViolation("must_beat", f"seat {seat} can beat the winning card")
                renege = True
    played = CardPlayed(seat, card, True) if renege else _PLAYED[seat][index]
    if len(trick) + 1 < rules.players:
        return [played]
    winner = table.trick_winner(hand.leader, (*trick, index))
    events: list[AnyEvent] = [played, TrickWon(hand.tricks_played + 1, winner)]
    if hand.tricks_played + 1 == table.hand_size:
        won = list(hand.won)
        won[winner] += 1
        reneged = hand.reneged | (1 << table.unit_of[seat] if renege else 0)
        events.extend(_end_of_hand(state, hand, won, reneged, deal))
    return events


def _tally(state: Game, command: RecordTally, deal: DealSource | None) -> list[AnyEvent]:
    hand = _hand(state)
    if hand.phase not in ("pass", "play") or hand.tricks_played or hand.trick:
        raise RuleViolation("wrong_phase", "a tally is recorded once the bids are in")
    table = table_for(state.rules)
    tricks = command.tricks
    if (
        len(tricks) != table.players
        or any(isinstance(t, bool) or not isinstance(t, int) or t < 0 for t in tricks)
        or sum(tricks) != table.hand_size
    ):
        raise RuleViolation(
            "malformed", f"tricks must be {table.players} counts adding up to {table.hand_size}"
        )
    return _end_of_hand(state, hand, list(tricks), 0, deal)


def _end_of_hand(
    state: Game, hand: Hand, won: list[int], reneged: int, deal: DealSource | None
) -> list[AnyEvent]:
    """Score the hand, then end the game or deal the next hand."""
    rules = state.rules
    bids = tuple(bid if bid is not None else 0 for bid in hand.bids)
    result = score_hand(rules, bids, won, scores=state.scores, bags=state.bags, reneged=reneged)
    units = tuple(u for u in range(len(result.points)) if reneged >> u & 1)
    scored = HandScored(
        hand.number,
        bids,
        tuple(won),
        result.points,
        result.scores,
        result.bags,
        units,
        hand.seed,
    )
    events: list[AnyEvent] = [scored]
    winners = _winners(rules, result.scores, state.hands_played + 1)
    if winners:
        events.append(GameEnded(winners, result.scores))
    elif deal is not None:
        events.append(_deal(evolve(state, scored), deal))
    return events


def _winners(rules: Rules, scores: Sequence[int], hands_played: int) -> tuple[int, ...]:
    """The winning unit when the game ends after this hand, else (); a tie on top plays on."""
    over = (
        max(scores) >= rules.target
        or (rules.lose_at is not None and min(scores) <= rules.lose_at)
        or (rules.max_hands is not None and hands_played >= rules.max_hands)
    )
    if not over:
        return ()
    top = max(scores)
    leaders = tuple(unit for unit, score in enumerate(scores) if score == top)
    return leaders if len(leaders) == 1 else ()


# --------------------------------------------------------------------------- evolve


def evolve(state: Game | None, event: AnyEvent) -> Game:
    """Apply one event."""
    if state is None:
        if not isinstance(event, GameCreated):
            raise ValueError(f"a game starts with game_created, not {type(event).__name__}")
        return _created(event)
    if type(event) is CardPlayed:  # the hottest path, first
        return _card_played(state, event)
    return _EVOLVE[type(event)](state, event)


def fold(events: Iterable[AnyEvent], state: Game | None = None) -> Game | None:
    """The state after ``events``."""
    for event in events:
        state = evolve(state, event)
    return state


def _created(event: GameCreated) -> Game:
    rules = event.rules
    units = len(table_for(rules).units)
    return Game(
        game_id=event.game_id,
        rules=rules,
        status="waiting",
        players=(None,) * rules.players,
        first_dealer=event.dealer,
        entropy=event.entropy,
        scores=event.scores or (0,) * units,
        bags=event.bags or (0,) * units,
        version=1,
    )


def _in_hand(state: Game) -> Hand:
    if state.hand is None:
        raise ValueError("this event needs a hand in progress")
    return state.hand


def _with_hand(state: Game, hand: Hand) -> Game:
    return replace(state, hand=hand, version=state.version + 1)


def _seat_taken(state: Game, event: SeatTaken) -> Game:
    players = _with(state.players, event.seat, Player(event.player, event.entropy))
    return replace(
        state,
        players=players,
        status="playing" if all(players) else "waiting",
        version=state.version + 1,
    )


def _hand_dealt(state: Game, event: HandDealt) -> Game:
    rules = state.rules
    players = rules.players
    first_dealer = state.first_dealer
    if first_dealer is None:
        first_dealer = (event.dealer - state.hands_played) % players
    draw = rules.deal == "draw" and not any(event.hands)
    masks = [sum(card.bit for card in cards) for cards in event.hands]
    hand = Hand(
        number=event.hand,
        dealer=event.dealer,
        phase="draw" if draw else "bid",
        turn=(event.dealer + 1) % players,
        holdings=holdings_of(masks),
        looked=0,
        bids=(None,) * players,
        won=(0,) * players,
        pile=(event.deck or ()) if draw else (),
        commitment=event.commitment,
        seed=event.seed,
    )
    return replace(
        state,
        hand=hand,
        first_dealer=first_dealer,
        status="playing",
        version=state.version + 1,
    )


def _card_drawn(state: Game, event: CardDrawn) -> Game:
    hand = _in_hand(state)
    holdings, discarded = hand.holdings, hand.discarded
    if event.card is not None:
        if event.kept:
            holdings |= event.card.bit << LANE * event.seat
        else:
            discarded |= event.card.bit
    drawn = hand.drawn + 1
    turn, phase = hand.turn, hand.phase
    players = state.rules.players
    if drawn % 2 == 0:
        turn = (turn + 1) % players
        if all((holdings >> LANE * seat & HELD).bit_count() == 13 for seat in range(players)):
            phase, turn = "bid", (hand.dealer + 1) % players
    hand = replace(
        hand,
        holdings=holdings,
        discarded=discarded,
        drawn=drawn,
        turn=turn,
        phase=phase,
        looked=hand.looked | 1 << event.seat,
    )
    return _with_hand(state, hand)


def _hand_looked(state: Game, event: HandLooked) -> Game:
    hand = _in_hand(state)
    return _with_hand(state, replace(hand, looked=hand.looked | 1 << event.seat))


def _bid_placed(state: Game, event: BidPlaced) -> Game:
    hand = _in_hand(state)
    rules = state.rules
    bids = _with(hand.bids, event.seat, event.bid)
    hand = replace(hand, bids=bids, turn=(event.seat + 1) % rules.players)
    if all(bid is not None for bid in bids):
        due = 0
        if rules.blind_nil_pass and rules.partnerships:
            table = table_for(rules)
            for seat, bid in enumerate(bids):
                partner = table.partner_of(seat)
                if bid == BLIND_NIL and partner is not None:
                    due |= 1 << seat | 1 << partner
        if due:
            hand = replace(
                hand,
                phase="pass",
                turn=NO_SEAT,
                passes_due=due,
                passed=(None,) * rules.players,
            )
        else:
            hand = _start_play(rules, hand)
    return _with_hand(state, hand)


def _start_play(rules: Rules, hand: Hand) -> Hand:
    """The opening lead: left of the dealer, the dealer, or the holder of the lowest club."""
    players = rules.players
    leader = (hand.dealer + 1) % players
    opening = -1
    if rules.first_lead == "dealer":
        leader = hand.dealer
    elif rules.first_lead == "lowest_club":
        in_play = 0
        for seat in range(players):
            in_play |= held(hand, seat)
        clubs = in_play & table_for(rules).suit_mask[CLUBS]
        if clubs:
            opening = lowest(clubs)
            leader = next(seat for seat in range(players) if held(hand, seat) >> opening & 1)
    return replace(hand, phase="play", turn=leader, leader=leader, opening_card=opening)


def _cards_passed(state: Game, event: CardsPassed) -> Game:
    hand = _in_hand(state)
    cards = event.cards or ()
    mask = sum(card.bit for card in cards)
    hand = replace(
        hand,
        holdings=hand.holdings & ~(mask << LANE * event.seat),
        passes_due=hand.passes_due & ~(1 << event.seat),
        passed=_with(hand.passed, event.seat, cards),
    )
    return _with_hand(state, hand)


def _cards_received(state: Game, event: CardsReceived) -> Game:
    hand = _in_hand(state)
    mask = sum(card.bit for card in event.cards or ())
    hand = replace(
        hand,
        holdings=hand.holdings | mask << LANE * event.seat,
        passed=_with(hand.passed, event.giver, None),
    )
    if not hand.passes_due and not any(cards is not None for cards in hand.passed):
        hand = _start_play(state.rules, hand)
    return _with_hand(state, hand)


def _card_played(state: Game, event: CardPlayed) -> Game:
    hand = state.hand
    if hand is None:
        raise ValueError("card_played needs a hand in progress")
    seat = event.seat
    card = event.card
    table = table_for(state.rules)
    trick = hand.trick
    broken = hand.spades_broken
    if trick and not broken:
        suit_of = table.suit_of
        broken = suit_of[card.ordinal] == TRUMP and suit_of[trick[0]] != TRUMP
    hand = replace(
        hand,
        holdings=hand.holdings & ~(card.bit << LANE * seat),
        trick=(*trick, card.ordinal),
        turn=(seat + 1) % table.players,
        spades_broken=broken,
        reneged=hand.reneged | (1 << table.unit_of[seat]) if event.renege else hand.reneged,
    )
    return replace(state, hand=hand, version=state.version + 1)


def _trick_won(state: Game, event: TrickWon) -> Game:
    hand = _in_hand(state)
    won = hand.won
    seat = event.seat
    hand = replace(
        hand,
        trick=(),
        won=(*won[:seat], won[seat] + 1, *won[seat + 1 :]),
        tricks_played=hand.tricks_played + 1,
        turn=seat,
        leader=seat,
    )
    return _with_hand(state, hand)


def _hand_scored(state: Game, event: HandScored) -> Game:
    return replace(
        state,
        scores=event.scores,
        bags=event.bags,
        hands_played=state.hands_played + 1,
        hand=None,
        version=state.version + 1,
    )


def _game_ended(state: Game, event: GameEnded) -> Game:
    return replace(
        state, status="finished", winners=event.winners, hand=None, version=state.version + 1
    )


T = TypeVar("T")


def _with(values: tuple[T, ...], at: int, value: T) -> tuple[T, ...]:
    return (*values[:at], value, *values[at + 1 :])


_EVOLVE: dict[type[Any], Callable[[Game, Any], Game]] = {
    SeatTaken: _seat_taken,
    HandDealt: _hand_dealt,
    CardDrawn: _card_drawn,
    HandLooked: _hand_looked,
    BidPlaced: _bid_placed,
    CardsPassed: _cards_passed,
    CardsReceived: _cards_received,
    CardPlayed: _card_played,
    TrickWon: _trick_won,
    HandScored: _hand_scored,
    GameEnded: _game_ended,
}

_PLAYED = [[CardPlayed(seat, card) for card in CARDS] for seat in range(4)]
"""Shared, immutable CardPlayed events: a play is the hottest path of the engine."""


# --------------------------------------------------------------------------- legal actions

_PLAYS = [[PlayCard(seat, card) for card in CARDS] for seat in range(4)]
_SUIT_PLAYS: list[list[tuple[int, dict[int, tuple[PlayCard, ...]]]]] = [
    [(shift, {}) for shift in (0, 13, 26, 39, 52)] for _ in range(4)
]
"""Per seat and suit (13 bits of a hand), the plays of each set of cards met so far."""


_OFFSETS = [tuple(i for i in range(13) if chunk >> i & 1) for chunk in range(1 << 13)]
"""The set bits of every 13-bit number."""


def _plays_in(seat: int, shift: int, chunk: int) -> tuple[PlayCard, ...]:
    plays = _PLAYS[seat]
    return tuple([plays[shift + offset] for offset in _OFFSETS[chunk]])


_LOOKS = [LookAtHand(seat) for seat in range(4)]
_DRAWS = [(Draw(seat, True), Draw(seat, False)) for seat in range(4)]


class PassDue(msgspec.Struct, frozen=True):
    """A pass the seat owes: ``count`` cards of its choosing (the API's ``{"type": "pass",
    "count": n}``)."""

    seat: int
    count: int


def legal_plays(state: Game, seat: int) -> int:
    """The bit set of cards ``seat`` may play now (0 when it may not play)."""
    hand = state.hand
    if state.status != "playing" or hand is None or hand.phase != "play" or hand.turn != seat:
        return 0
    return _playable(state.rules, hand, seat)


def _playable(rules: Rules, hand: Hand, seat: int) -> int:
    """The cards the seat on turn may play (the checks of :func:`_play`, solved for the card)."""
    table = table_for(rules)
    hold = hand.holdings >> LANE * seat & HELD
    trick = hand.trick
    if not trick:
        if hand.opening_card >= 0 and hand.tricks_played == 0:
            return 1 << hand.opening_card
        if not hand.spades_broken and rules.spades_lead == "broken":
            others = hold & ~table.suit_mask[TRUMP]
            if others:
                return others
        return hold
    if rules.renege == "penalize":
        return hold
    allowed = hold & table.suit_mask[table.suit_of[trick[0]]] or hold
    if rules.must_beat:
        beaters = _beaters(table, allowed, _current_winner(table, trick))
        if beaters:
            return beaters
    return allowed


def legal_bids(state: Game, seat: int) -> list[Bid]:
    """Every bid ``seat`` may make now (the same checks as :func:`decide`, solved for the bid)."""
    hand = state.hand
    if state.status != "playing" or hand is None or hand.phase != "bid" or hand.turn != seat:
        return []
    rules = state.rules
    floor = _team_floor(rules, hand, seat)
    bids: list[Bid] = []
    if rules.nil and floor <= 0:
        if _blind_nil_refusal(state, hand, seat) is None:
            bids.append(BLIND_NIL)
        bids.append(NIL)
    bids.extend(range(max(rules.min_bid, floor), table_for(rules).hand_size + 1))
    return bids


Action = LookAtHand | Draw | PlaceBid | PlayCard | PassDue
"""What :func:`legal_actions` lists."""


def legal_actions(state: Game, seat: int) -> list[Action]:
    """Every action ``seat`` may send now. A pass is given as :class:`PassDue` (the cards are the
    seat's choice)."""
    hand = state.hand
    if hand is None or state.status != "playing" or not 0 <= seat < state.rules.players:
        return []
    actions: list[Action] = []
    if not hand.looked >> seat & 1:
        actions.append(_LOOKS[seat])
    phase = hand.phase
    if phase == "play":
        if hand.turn == seat:
            actions.extend(_plays(seat, _playable(state.rules, hand, seat)))
    elif phase == "bid":
        actions.extend(PlaceBid(seat, bid) for bid in legal_bids(state, seat))
    elif phase == "draw":
        if hand.turn == seat:
            actions.extend(_DRAWS[seat])
    elif hand.passes_due >> seat & 1:
        actions.append(PassDue(seat, state.rules.blind_nil_pass))
    return actions


def _plays(seat: int, mask: int) -> tuple[PlayCard, ...] | list[PlayCard]:
    """The PlayCard commands of a bit set of cards, read 13 bits (a suit) at a time."""
    suits = _SUIT_PLAYS[seat]
    shift = (mask.bit_length() - 1) // 13 * 13
    if mask >> shift << shift == mask:  # one suit, as when following: one look-up
        known = suits[shift // 13][1]
        chunk = mask >> shift
        plays = known.get(chunk)
        if plays is None:
            plays = known[chunk] = _plays_in(seat, shift, chunk)
        return plays
    out: list[PlayCard] = []
    for shift, known in suits:
        chunk = mask >> shift & 0x1FFF
        if chunk:
            plays = known.get(chunk)
            if plays is None:
                plays = known[chunk] = _plays_in(seat, shift, chunk)
            out.extend(plays)
    return out
