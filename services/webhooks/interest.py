"""Which commits the webhooks can matter to, known before any database work.

Endpoints change rarely (a platform registers or deletes one), while commits come by the
hundred a second. So the worker does not ask the database about every batch: an
:class:`EndpointWatch` reads the endpoints every :data:`WATCH_S` (and whenever an ingest holds
them anyway), and the ingests (one per stream the process follows) decide by what it read
last. While no endpoint exists, no stream
is followed at all; a commit whose platform has none is skipped without being folded.

A view read a moment ago may miss an endpoint registered since. That costs time, never a
delivery: the transaction that records a batch (or only moves the position past it) holds the
endpoints and checks that they want nothing the view left out (:func:`covers`); if they do, the
ingest goes back to its stored position and maps the commits again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import structlog

from services.store.database import Store, is_store_trouble
from services.store.webhook_endpoints import Endpoint, every_endpoint
from services.webhooks.metrics import DISABLED

log = structlog.get_logger("spades.webhooks")

WATCH_S = 0.5
"""How often the endpoints are read: at most this long after a platform's first endpoint is
registered, the worker starts to follow the streams for it."""

Interest = dict[str, int]
"""Per platform with endpoints: the sequence of a stream after which one of them wants to hear."""


def interest_of(endpoints: Sequence[Endpoint], stream: str) -> Interest:
    """What ``endpoints`` want of ``stream`` (by its name); an endpoint with no starting point
    there wants nothing of it yet (the worker gives it one before it maps for it)."""
    interest: Interest = {}
    for endpoint in endpoints:
        after = endpoint.after(stream)
        if after is not None:
            interest[endpoint.platform] = min(interest.get(endpoint.platform, after), after)
    return interest


def covers(mapped: Interest, wanted: Interest, through: int) -> bool:
    """Whether commits mapped by ``mapped`` made every webhook that ``wanted`` asks for among
    the sequences up to ``through``: an endpoint registered after them asks for none.

    >>> covers({"acme": 10}, {"acme": 10, "rival": 40}, through=40)
    True
    >>> covers({"acme": 10}, {"acme": 10, "rival": 30}, through=40)
    False
    >>> covers({"acme": 10}, {"acme": 5}, through=40)
    False
    """
    return all(
        after >= through or mapped.get(platform, through) <= after
        for platform, after in wanted.items()
    )


class EndpointWatch:
    """The endpoints as last read, shared by the worker's ingests."""

    def __init__(self, store: Store, *, every_s: float = WATCH_S) -> None:
        self.store = store
        self.every_s = every_s
        self.endpoints: tuple[Endpoint, ...] = ()
        self._changed = asyncio.Event()

    def interest(self, stream: str) -> Interest:
        return interest_of(self.endpoints, stream)

    def saw(self, endpoints: Sequence[Endpoint]) -> None:
        """Take the endpoints as read now (by the watch, or by an ingest holding them)."""
        found = tuple(endpoints)
        if found != self.endpoints:
            self.endpoints = found
            DISABLED.set(sum(not endpoint.enabled for endpoint in found))
            self._changed.set()
            self._changed = asyncio.Event()

    async def until_any(self) -> None:
        """Return once an endpoint exists."""
        while not self.endpoints:
            await self._changed.wait()

    async def run(self) -> None:
        """Read the endpoints every :attr:`every_s` until cancelled."""
        while True:
            try:
                async with self.store.reading() as conn:
                    self.saw(await every_endpoint(conn))
            except Exception as error:
                if not is_store_trouble(error):
                    raise
                log.warning("webhooks database unavailable", error=repr(error))
            await asyncio.sleep(self.every_s)
