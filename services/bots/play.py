"""Playing a card: lead and follow like a decent player.

In order of precedence: a nil bidder ducks every trick it can; the partner of a nil bidder
covers it (plays over it, leads high); an opponent's nil is attacked (lead low in suits it still
holds, duck under its cards); otherwise a side that still needs tricks wins them cheaply and
saves its trumps, and a side that has made its contract ducks, because bags cost points.
Every choice is made among the legal cards, less any that would renege: a bot never reneges on
purpose, even when the table only penalizes it.
"""

from __future__ import annotations

from domain.cards import iter_cards
from domain.table import TRUMP
from services.bots.passing import exposure
from services.bots.situation import Situation, mask_of


def choose_card(sit: Situation) -> int:
    """The card (index) to play now."""
    plays = honest_plays(sit)
    if plays & (plays - 1) == 0:
        return plays.bit_length() - 1
    if not sit.trick:
        return _lead(sit, plays)
    return _follow(sit, plays)


def honest_plays(sit: Situation) -> int:
    """The legal cards that follow suit, and beat under ``must_beat``, whenever possible."""
    legal = mask_of(action["card"] for action in sit.legal if action["type"] == "play")
    if not sit.trick:
        return legal
    led = sit.suit(sit.trick[0][1])
    allowed = sit.in_suit(sit.hand, led) or sit.hand
    if sit.rules.must_beat:
        _, winning = sit.winning()
        allowed = _beaters(sit, allowed, winning) or allowed
    return allowed & legal or legal


def _beaters(sit: Situation, mask: int, winning: int) -> int:
    return sum(1 << card for card in iter_cards(mask) if sit.table.beats(card, winning))


# ---------------------------------------------------------------------------- following


def _follow(sit: Situation, plays: int) -> int:
    winner, winning = sit.winning()
    later = sit.later()
    led = sit.suit(sit.trick[0][1])
    beaters = _beaters(sit, plays, winning)
    losers = plays & ~beaters
    if sit.live_nil(sit.seat):
        return _follow_as_nil(sit, beaters, losers, later)
    partner = sit.partner
    if partner is not None and sit.live_nil(partner) and not _out_of_reach(sit, winner, winning):
        if partner in later:
            return _shield(sit, beaters, losers, later)
        if winner == partner and beaters:
            return _lowest(sit, beaters)  # play over the nil: any card that beats it will do
    for target in _nils_to_attack(sit):
        if winner == target and losers:
            return _cheapest(sit, losers)  # leave the trick on the nil
        if target in later and not sit.may_be_void(target, led):
            return _lowest(sit, losers or beaters)  # keep the card to beat low
    if sit.goal() == "win":
        return _contest(sit, beaters, losers, later, winner, winning)
    return _duck(sit, beaters, losers, later)


def _follow_as_nil(sit: Situation, beaters: int, losers: int, later: list[int]) -> int:
    if losers:  # shed the card likeliest to take a trick later, while it is safe to
        return max(iter_cards(losers), key=lambda card: exposure(sit, card))
    if later:
        return _lowest(sit, beaters)  # someone may still play over it
    return _highest(sit, beaters)  # the nil is lost: spend the card likeliest to win again


def _out_of_reach(sit: Situation, winner: int, winning: int) -> bool:
    """Whether an opponent's card already wins the trick beyond anything left to beat it."""
    return sit.table.unit_of[winner] != sit.unit and not sit.higher(winning, sit.unseen)


def _shield(sit: Situation, beaters: int, losers: int, later: list[int]) -> int:
    """The nil partner plays after this seat: put a card on the trick it can play under."""
    if not beaters:
        return _cheapest(sit, losers)
    led = sit.suit(sit.trick[0][1])
    following = sit.in_suit(beaters, led)
    if following:
        return _highest(sit, following)
    opponents = [seat for seat in later if seat != sit.partner]
    ruffs = sorted(iter_cards(beaters), key=sit.strength)
    safe = [card for card in ruffs if sit.holds(card, opponents, led)]
    return safe[0] if safe else ruffs[-1]


def _contest(
    sit: Situation, beaters: int, losers: int, later: list[int], winner: int, winning: int
) -> int:
    """Win the trick as cheaply as it can be won, unless the partner has it already."""
    led = sit.suit(sit.trick[0][1])
    partner_has_it = winner == sit.partner
    if partner_has_it and sit.holds(winning, later, led):
        return _cheapest(sit, losers or beaters)
    if not beaters:
        return _cheapest(sit, losers)
    safe = [card for card in iter_cards(beaters) if sit.holds(card, later, led)]
    if safe:
        return min(safe, key=sit.strength)
    if partner_has_it and losers:
        return _cheapest(sit, losers)
    if not sit.in_suit(beaters, led):
        return _lowest(sit, beaters)  # ruff as low as beats the trick
    if len(sit.trick) == 1 and losers:
        return _cheapest(sit, losers)  # second hand low
    return _highest(sit, sit.in_suit(beaters, led))  # third hand high


def _duck(sit: Situation, beaters: int, losers: int, later: list[int]) -> int:
    """Lose the trick, shedding the highest card that can safely go."""
    if losers:
        return _highest(sit, losers)
    led = sit.suit(sit.trick[0][1])
    exposed = [card for card in iter_cards(beaters) if not sit.holds(card, later, led)]
    if exposed:
        return min(exposed, key=sit.strength)  # the likeliest card to be played over
    return _highest(sit, beaters)  # the trick is ours anyway: spend the likeliest winner


# ---------------------------------------------------------------------------- leading


def _lead(sit: Situation, plays: int) -> int:
    if sit.live_nil(sit.seat):
        return _lead_low(sit, plays)
    partner = sit.partner
    if partner is not None and sit.live_nil(partner):
        return _lead_for_nil(sit, plays, partner)
    for target in _nils_to_attack(sit):
        card = _lead_against_nil(sit, plays, target)
        if card is not None:
            return card
    if sit.goal() == "win":
        return _lead_to_win(sit, plays)
    return _lead_low(sit, plays)


def _others(sit: Situation) -> list[int]:
    return [(sit.seat + k) % sit.players for k in range(1, sit.players)]


def _lead_low(sit: Situation, plays: int) -> int:
    """The lead least likely to win: many higher cards out against it, not a trump."""
    others = _others(sit)

    def chance(card: int) -> tuple[bool, bool, int, int]:
        above = sit.higher(card, sit.unseen).bit_count()
        return (sit.holds(card, others), sit.suit(card) == TRUMP, -above, sit.table.power[card])

    return min(iter_cards(plays), key=chance)


def _lead_for_nil(sit: Situation, plays: int, partner: int) -> int:
    """Lead high, best a winner, best in a suit the nil partner can throw off on."""
    others = _others(sit)

    def cover(card: int) -> tuple[bool, bool, int]:
        void = bool(sit.voids[partner] >> sit.suit(card) & 1)
        return (sit.holds(card, others), void, sit.strength(card))

    return max(iter_cards(plays), key=cover)


def _lead_against_nil(sit: Situation, plays: int, target: int) -> int | None:
    """Lead low in a suit the nil bidder still holds, lower than its cards if that is known."""
    held = sit.possible(target)
    candidates = [
        card
        for card in iter_cards(plays)
        if sit.suit(card) != TRUMP and sit.in_suit(held, sit.suit(card))
    ]
    if not candidates:
        return None
    power = sit.table.power

    def pressure(card: int) -> tuple[int, int, int]:
        suit_held = sit.in_suit(held, sit.suit(card))
        under = sum(1 for other in iter_cards(suit_held) if power[other] < power[card])
        return (under, suit_held.bit_count(), power[card])

    return min(candidates, key=pressure)


def _lead_to_win(sit: Situation, plays: int) -> int:
    """Cash side winners before they are ruffed, then draw trumps with the top ones; else give
    the lead away cheaply, from a short suit when there are trumps to ruff it later."""
    others = _others(sit)
    sure = [card for card in iter_cards(plays) if sit.holds(card, others)]
    side = [card for card in sure if sit.suit(card) != TRUMP]
    if side:
        return min(side, key=sit.strength)
    if sure:
        return min(sure, key=sit.strength)
    partner = sit.partner
    side_plays = [card for card in iter_cards(plays) if sit.suit(card) != TRUMP]
    if partner is not None and sit.in_suit(sit.possible(partner), TRUMP):
        ruffable = [card for card in side_plays if sit.voids[partner] >> sit.suit(card) & 1]
        if ruffable:
            return min(ruffable, key=sit.strength)
    if not side_plays:
        return _lowest(sit, plays)
    trumps = sit.in_suit(sit.hand, TRUMP).bit_count()

    def exit_card(card: int) -> tuple[int, int]:
        length = sit.in_suit(sit.hand, sit.suit(card)).bit_count()
        return (length if trumps else -length, sit.table.power[card])

    return min(side_plays, key=exit_card)


# ---------------------------------------------------------------------------- shared


def _nils_to_attack(sit: Situation) -> list[int]:
    """Opponents whose nil is still alive, unless this side needs every trick left."""
    if sit.need(sit.unit) >= sit.remaining:
        return []
    return [seat for seat in sit.opponents() if sit.live_nil(seat)]


def _lowest(sit: Situation, mask: int) -> int:
    return min(iter_cards(mask), key=sit.strength)


def _highest(sit: Situation, mask: int) -> int:
    return max(iter_cards(mask), key=sit.strength)


def _cheapest(sit: Situation, mask: int) -> int:
    """The card the hand misses least: not a trump, not a winner, best from a short suit when
    there are trumps to ruff it once it is void, and low."""
    trumps = sit.in_suit(sit.hand, TRUMP).bit_count()
    unseen = sit.unseen

    def worth(card: int) -> tuple[bool, bool, bool, int]:
        suit = sit.suit(card)
        short = trumps > 0 and sit.in_suit(sit.hand, suit).bit_count() <= 2
        top = not sit.higher(card, unseen)
        return (suit == TRUMP, top, not short, sit.table.power[card])

    return min(iter_cards(mask), key=worth)
