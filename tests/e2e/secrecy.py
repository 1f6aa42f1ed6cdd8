"""What each reader was shown, and what it could have seen at the table: the secrecy check.

Every answer a reader gets (a public state, a seat's view, an action's events, a page of
events, a server-sent event) is kept as a :class:`Sighting` at the game version it shows. After
the game, the hand records reveal every deal, and :class:`Timeline` works out from them, version
by version, which cards each reader could see at a real table:

- everyone: the cards played to tricks so far, and the face-up discards of the draw;
- a seat, besides: its own hand once it has looked or bid (in the draw, the cards it has drawn
  and the one it is shown on its turn), and cards passed to it once the exchange is made;
- nobody: the deck, another seat's hand, the other player's kept draws, and the deal's seed
  before the hand is scored.

Any other card in any value of an answer (the ``rules`` object aside) is a leak.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec

from domain.cards import CARDS
from services.client import HandRecord

CARD_NAMES = frozenset(card.value for card in CARDS) | {
    "10" + card.value[1] for card in CARDS if card.value[0] == "T"
}
PUBLIC = None


def cards_shown(document: Any) -> set[str]:
    """Every card named anywhere in a JSON document, except inside ``rules`` (whose
    ``deck_remove`` names cards taken out of the pack, which everyone knows)."""
    found: set[str] = set()
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(value for key, value in item.items() if key != "rules")
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and item in CARD_NAMES:
            found.add("T" + item[2] if item.startswith("10") else item)
    return found


@dataclass(frozen=True)
class Sighting:
    """One thing a reader (a seat, or None for the public) was shown, at a game version."""

    reader: int | None
    version: int
    where: str
    document: Any


@dataclass
class Sightings:
    """Everything shown to whom; seat tokens tell which seat a request came from."""

    seat_of_token: dict[str, int] = field(default_factory=dict)
    platform_keys: set[str] = field(default_factory=set)
    """Keys of the game's platform, which reads what the public reads."""
    seen: list[Sighting] = field(default_factory=list)

    def reader(self, authorization: str | None) -> int | None:
        if not authorization:
            return PUBLIC
        credential = authorization.removeprefix("Bearer ").strip()
        if credential in self.platform_keys:
            return PUBLIC
        return self.seat_of_token[credential]

    def add_state(self, reader: int | None, where: str, state: Any) -> None:
        assert isinstance(state, dict), f"{where}: {state!r}"
        self.seen.append(Sighting(reader, int(state["version"]), where, state))

    def add_events(self, reader: int | None, where: str, records: Sequence[Any]) -> None:
        for record in records:
            self.seen.append(Sighting(reader, int(record["version"]), where, record))

    def add_answer(self, method: str, path: str, authorization: str | None, body: Any) -> None:
        """An HTTP answer of the game's endpoints; the others show no hand in play."""
        parts = path.strip("/").split("/")  # v1 games {id} [view|actions|events]
        if parts[:2] != ["v1", "games"] or len(parts) < 3 or len(parts) > 4:
            return
        tail = parts[3] if len(parts) > 3 else ""
        if tail not in ("", "view", "actions", "events"):
            return
        reader = self.reader(authorization)
        if (tail == "" and method == "GET") or tail == "view":
            self.add_state(reader, path, body)
        elif tail in ("actions", "events"):
            self.add_events(reader, f"{method} {path}", body["events"])

    def add_server_sent(
        self, reader: int | None, event: str, event_id: str | None, data: Any
    ) -> None:
        if event == "state":
            self.add_state(reader, "sse state", data)
        else:
            version = data.get("version") if isinstance(data, dict) else None
            if version is None and event_id is not None:
                version = int(event_id)
            assert version is not None, f"sse {event}: no position in {data!r}"
            self.seen.append(Sighting(reader, int(version), f"sse {event}", data))


class RecordingTransport(httpx.AsyncBaseTransport):
    """Passes requests on and keeps every JSON answer of the game endpoints as a sighting
    (streams excepted: their messages are kept by whoever reads them)."""

    def __init__(self, sightings: Sightings) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.sightings = sightings

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if "text/event-stream" in request.headers.get("Accept", ""):
            return await self._inner.handle_async_request(request)
        request.headers["Accept-Encoding"] = "identity"  # keep the bytes as they were sent
        response = await self._inner.handle_async_request(request)
        raw = b"".join([chunk async for chunk in response.aiter_raw()])
        await response.aclose()
        if response.status_code == 200:
            self.sightings.add_answer(
                request.method,
                request.url.path,
                request.headers.get("Authorization"),
                msgspec.json.decode(raw),
            )
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx.ByteStream(raw),
            request=request,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass
class HandTimeline:
    """One hand: where it starts and ends in the game's versions, and who saw what when."""

    record: HandRecord
    dealt_at: int
    scored_at: int
    played: list[tuple[int, str]] = field(default_factory=list)
    """(version, card) of every card played to a trick, and of every face-up discard."""
    picked_up: dict[int, int] = field(default_factory=dict)
    """seat -> the version it first saw its own cards (a look or a bid)."""
    received: dict[int, int] = field(default_factory=dict)
    """seat -> the version the passed cards reached it."""
    draws_at: list[int] = field(default_factory=list)
    """The version of each draw of the two-player deal, in order (matching record.draws)."""

    def visible(self, reader: int | None, version: int) -> set[str]:
        """The cards of this hand ``reader`` could have seen at the table by ``version``."""
        if version >= self.scored_at:
            return {card.value for seat in self.record.deal.hands for card in seat} | {
                d.card.value for d in self.record.draws
            }
        cards = {card for at, card in self.played if at <= version}
        if reader is PUBLIC:
            return cards
        draws = self.record.draws
        if draws:
            done = sum(1 for at in self.draws_at if at <= version)
            cards |= {d.card.value for d in draws[:done] if d.seat == reader}
            if done < len(draws) and draws[done].seat == reader:
                cards.add(draws[done].card.value)  # the card it is shown on its turn
        elif self.picked_up.get(reader, version + 1) <= version:
            cards |= {card.value for card in self.record.deal.hands[reader]}
        if self.received.get(reader, version + 1) <= version:
            for exchange in self.record.passes:
                if exchange.to == reader:
                    cards |= {card.value for card in exchange.cards}
        return cards


class Timeline:
    """The whole game's timeline, from its public events and its hand records."""

    def __init__(self, public_events: Sequence[Any], records: Sequence[HandRecord]) -> None:
        by_hand = {record.hand: record for record in records}
        self.hands: list[HandTimeline] = []
        current: HandTimeline | None = None
        for record in public_events:
            version, event = int(record["version"]), _event(record)
            kind, seat = event.get("type"), event.get("seat")
            if kind == "hand_dealt":
                number = int(event["hand"])
                assert number in by_hand, f"hand {number} was dealt but has no record"
                current = HandTimeline(by_hand[number], version, scored_at=1 << 62)
                self.hands.append(current)
                continue
            if current is None:
                continue
            if kind == "hand_scored":
                current.scored_at = version
            elif kind == "card_played":
                current.played.append((version, event["card"]))
            elif kind == "card_drawn":
                current.draws_at.append(version)
                if not event["kept"]:
                    current.played.append((version, event["card"]))
            elif kind in ("hand_looked", "bid_placed") and isinstance(seat, int):
                current.picked_up.setdefault(seat, version)
            elif kind == "cards_received" and isinstance(seat, int):
                current.received[seat] = version
        assert [hand.record.hand for hand in self.hands] == [r.hand for r in records]
        for hand in self.hands:
            tricks = [c.card.value for trick in hand.record.tricks for c in trick.cards]
            public_plays = [card for at, card in hand.played]
            discards = [d.card.value for d in hand.record.draws if not d.kept]
            assert public_plays == discards + tricks, f"hand {hand.record.hand}: plays differ"

    def hand_at(self, version: int) -> HandTimeline | None:
        found = None
        for hand in self.hands:
            if hand.dealt_at <= version:
                found = hand
        return found

    def leaks(self, sightings: Sequence[Sighting]) -> Iterator[str]:
        """Every card or seed shown to someone who could not see it then."""
        for sighting in sightings:
            hand = self.hand_at(sighting.version)
            shown = cards_shown(sighting.document)
            allowed = hand.visible(sighting.reader, sighting.version) if hand else set()
            who = "the public" if sighting.reader is PUBLIC else f"seat {sighting.reader}"
            if shown - allowed:
                yield (
                    f"{who} was shown {sorted(shown - allowed)} at version {sighting.version} "
                    f"in {sighting.where}: {sighting.document}"
                )
            text = msgspec.json.encode(sighting.document).decode()
            for later in self.hands:
                seed = later.record.deal.seed
                if sighting.version < later.scored_at and seed and seed in text:
                    yield (
                        f"{who} was shown the seed of hand {later.record.hand} at version "
                        f"{sighting.version}, before it was scored, in {sighting.where}"
                    )


def _event(record: Any) -> dict[str, Any]:
    """The event of an event record: under ``event``, or the record itself."""
    inner = record.get("event")
    return inner if isinstance(inner, dict) else dict(record)
