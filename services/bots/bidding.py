"""Bidding: count the tricks a hand should take, and judge whether a nil can survive.

The count follows the usual advice of the rules documents: high trumps that are guarded by
enough lower ones, trump length beyond what the others are likely to hold, side aces and
guarded kings while the suit can still go round before someone ruffs it, and ruffs from voids
and short suits for the trumps not already counted.
"""

from __future__ import annotations

from domain.bids import NIL, Bid, is_blind, is_nil, tricks_bid
from domain.cards import iter_cards
from domain.table import TRUMP
from services.bots.situation import Situation

SIDE_SUITS = (0, 1, 2)
RUFF_VALUE = 0.6
"""A spare trump with a short side suit makes a ruff about this often (the lead must come)."""
SIDE_HONOUR = {0: 1.0, 1: 0.55, 2: 0.25}
"""What a side card is worth by how many higher cards of its suit are out against it."""
LONG_SUIT_HONOUR = {0: 1.0, 1: 0.6, 2: 0.45, 3: 0.25}
"""The same when a suit goes round four times or more before anyone is void (17-card hands):
the higher cards fall on earlier rounds and the lower honours cash."""


def estimate_tricks(sit: Situation, hand: int | None = None) -> float:
    """The tricks ``hand`` (the seat's own by default) should take, against the cards unseen."""
    unseen = sit.unseen if hand is None else sit.unseen & ~(hand & ~sit.hand)
    hand = sit.hand if hand is None else hand
    high, spare = _trump_tricks(sit, hand, unseen)
    side = sum(_side_tricks(sit, hand, unseen, suit) for suit in SIDE_SUITS)
    short = sum(_shortness(sit.in_suit(hand, suit).bit_count()) for suit in SIDE_SUITS)
    return high + side + RUFF_VALUE * min(spare, short)


def _trump_tricks(sit: Situation, hand: int, unseen: int) -> tuple[float, float]:
    """(Tricks from trumps, trumps left over for ruffing)."""
    mine = sorted(iter_cards(sit.in_suit(hand, TRUMP)), key=sit.strength, reverse=True)
    count = len(mine)
    high = 0.0
    counted = 0
    for place, card in enumerate(mine):
        above = sit.higher(card, unseen).bit_count()
        guards = count - place  # this card and the trumps below it, to outlast the higher ones
        if above == 0:
            high, counted = high + 1, counted + 1
        elif guards > above + 1:
            high, counted = high + 0.85, counted + 1
        elif guards == above + 1:
            high, counted = high + 0.5, counted + 1
    longest_other = _share(sit, unseen, TRUMP) + 1
    low = count - counted
    length = min(low, max(0.0, count - longest_other))
    return high + 0.9 * length, max(0.0, low - length)


def _side_tricks(sit: Situation, hand: int, unseen: int, suit: int) -> float:
    """Honours that should cash before the suit is ruffed."""
    mine = sorted(iter_cards(sit.in_suit(hand, suit)), key=sit.strength, reverse=True)
    length = len(mine)
    share = _share(sit, unseen, suit)
    honour = LONG_SUIT_HONOUR if share >= 4 else SIDE_HONOUR
    value = 0.0
    for place, card in enumerate(mine):
        above = sit.higher(card, unseen).bit_count()
        if above not in honour or length <= place + above:
            continue  # too many higher cards out, or too short to wait for them
        worth = honour[above]
        if place + above + 1 > share + 0.5:  # by then someone is likely void: ruffed
            worth *= 0.4
        value += worth
    return value


def _share(sit: Situation, unseen: int, suit: int) -> float:
    """The cards of ``suit`` another hand holds on average (the longest holds about one more)."""
    return sit.in_suit(unseen, suit).bit_count() * sit.table.hand_size / max(unseen.bit_count(), 1)


def _shortness(length: int) -> float:
    """Ruffing chances from a side suit of this length."""
    return {0: 2.0, 1: 1.0, 2: 0.4}.get(length, 0.0)


def nil_danger(sit: Situation, hand: int | None = None) -> float:
    """How likely ``hand`` is to be forced to take a trick: 0 for a clean nil hand.

    High trumps, trump length and side honours without low cards of the same suit to duck with
    all add to it; voids and low cards do not.
    """
    hand = sit.hand if hand is None else hand
    table = sit.table
    danger = 0.0
    trumps = list(iter_cards(sit.in_suit(hand, TRUMP)))
    for card in trumps:
        depth = sit.higher(card, table.pack_mask).bit_count()
        danger += 3.0 if depth < 4 else 1.0 if depth < 7 else 0.0
    allowed = 3 * table.hand_size // 13
    danger += 1.5 * max(0, len(trumps) - allowed)
    for suit in SIDE_SUITS:
        cards = sorted(iter_cards(sit.in_suit(hand, suit)), key=sit.strength)
        for below, card in enumerate(cards):
            # The lowest card of a suit should be a 7 at most, each next one may be two higher.
            exposure = table.power[card] - 2 * below - 7
            danger += max(0, exposure) * 0.75
            if not sit.higher(card, table.pack_mask):
                danger += 1.5  # an ace wins its suit's lead however many cards guard it
    return danger


def choose_bid(sit: Situation, bids: list[Bid]) -> Bid:
    """The seat's bid, one of ``bids`` (the legal ones)."""
    estimate = estimate_tricks(sit)
    if NIL in bids and _nil_is_sound(sit, estimate):
        return NIL
    numbers = [bid for bid in bids if isinstance(bid, int)]
    if not numbers:
        return bids[0]
    wanted = _rounded(sit, estimate)
    wanted = _fit_contract(sit, wanted)
    return min(numbers, key=lambda bid: (abs(bid - wanted), bid))


def _rounded(sit: Situation, estimate: float) -> int:
    return int(estimate + 0.5)


def _fit_contract(sit: Situation, wanted: int) -> int:
    """Keep the side's contract playable: at most every trick, and not the risky exact 10 of
    ``ten_for_two_hundred`` (or the all-tricks contract of ``boston``) by accident."""
    partner = sit.partner
    partner_bid = tricks_bid(sit.bids[partner]) if partner is not None else 0
    hand_size = sit.table.hand_size
    wanted = max(0, min(wanted, hand_size - partner_bid))
    contract = wanted + partner_bid
    if sit.rules.ten_for_two_hundred and contract == 10 and wanted > 0:
        wanted -= 1
    if sit.rules.boston and contract == hand_size and wanted > 0:
        wanted -= 1
    return wanted


def _nil_is_sound(sit: Situation, estimate: float) -> bool:
    """Nil with no high cards and low trumps; easier with a partner to cover it."""
    partner = sit.partner
    if partner is not None and is_nil(sit.bids[partner]):
        return False  # nobody would cover either of two nils
    if partner is None:
        return estimate < 1.0 and nil_danger(sit) == 0  # alone, with every other seat against it
    limit = 1.5 if sit.rules.nil_value >= 100 else 0.75
    return estimate < 2.0 and nil_danger(sit) <= limit


def wants_blind_nil(sit: Situation) -> bool:
    """Blind nil (chosen before looking) only far behind, when the other side nears the target:
    a gamble worth taking only when ordinary bidding is unlikely to catch up, and only with a
    partner to cover it (alone, it fails nine times in ten)."""
    partner = sit.partner
    if partner is None:
        return False
    partner_bid = sit.bids[partner]
    if partner_bid is not None and (is_nil(partner_bid) or tricks_bid(partner_bid) < 3):
        return False  # the partner could not cover it
    mine = sit.scores[sit.unit]
    best_other = max(score for unit, score in enumerate(sit.scores) if unit != sit.unit)
    behind = best_other - mine
    target = sit.rules.target
    return behind >= max(200, target * 2 // 5) and best_other >= 0.6 * target


BLIND_MARGIN = 1
"""A blind contract may ask at most this many tricks beyond the side's fair share of them."""


def wants_blind_bid(sit: Situation, bids: list[Bid]) -> Bid | None:
    """A blind bid (chosen before looking), the smallest the table allows, only when the score
    calls for a gamble: far enough behind that ordinary bidding will not catch up before
    another side reaches the target, and for a contract the side can hope to make unseen."""
    blind = sorted((bid for bid in bids if is_blind(bid)), key=tricks_bid)
    if not blind:
        return None
    mine = sit.scores[sit.unit]
    best_other = max(score for unit, score in enumerate(sit.scores) if unit != sit.unit)
    target = sit.rules.target
    if best_other - mine < max(150, target * 3 // 10) or best_other < 0.5 * target:
        return None
    seats = len(sit.table.units[sit.unit])
    fair = sit.table.hand_size * seats / sit.players  # the side's share of the tricks
    partner = sit.partner
    partner_bid = tricks_bid(sit.bids[partner]) if partner is not None else 0
    if tricks_bid(blind[0]) + partner_bid > fair + BLIND_MARGIN:
        return None  # unseen, the side cannot hope for much more than its share
    if sit.rules.boston and tricks_bid(blind[0]) + partner_bid == sit.table.hand_size:
        return None
    return blind[0]
