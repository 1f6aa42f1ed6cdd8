"""The ``hand.scored`` webhook's receipt, added when the webhook is sent.

The outbox holds the webhook as the game's history made it (``receipt`` null): the audit log is
kept by the projection workers, a moment behind the stream the webhooks worker follows. Before a
``hand.scored`` is sent, the hand's receipt (:func:`services.store.receipts.hand_receipt`, the
same the API hands out) is looked for until ``wait_s`` after the delivery was recorded
(``SPADES_WEBHOOK_RECEIPT_WAIT_S``), and where the log has witnesses until one has cosigned
it; one found goes into the body (cosigned or, past the wait, not), else the body goes without it
(the platform asks ``GET /v1/games/{id}/hands/{n}/receipt`` later). Where no worker keeps the log
nothing is waited for. The wait holds only the delivery's own chain (one endpoint, one game),
which must wait anyway to keep its order.

A receipt is only of a finished hand, which the platform that owns the game reads in full anyway.
A retry looks again: a try that went without the receipt may be followed by one that has it,
under the same ``webhook-id``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import msgspec

from services.store.database import Store
from services.store.receipts import hand_receipt, log_kept, ready

POLL_S = 0.05
"""How often the log is looked at while a receipt is waited for."""


class Receipts:
    """Adds receipts to the ``hand.scored`` bodies about to be sent."""

    def __init__(
        self,
        store: Store,
        wait_s: float,
        clock: Callable[[], float] = time.time,
        witnessed: bool = False,
    ) -> None:
        self.store = store
        self.wait_s = wait_s
        self.clock = clock
        self.witnessed = witnessed
        """The log has witnesses: a receipt is waited for until one has cosigned it too."""

    async def added(self, body: bytes, recorded_at: float) -> bytes:
        """``body`` with its receipt if it is a ``hand.scored`` whose hand the log holds (or
        comes to hold by ``recorded_at + wait_s``); else ``body`` as it is."""
        if b'"hand.scored"' not in body:
            return body
        webhook: dict[str, Any] = msgspec.json.decode(body)
        data = webhook.get("data")
        if webhook.get("type") != "hand.scored" or not isinstance(data, dict):
            return body
        if data.get("receipt") is not None or not await log_kept(self.store):
            return body
        deadline = recorded_at + self.wait_s
        while True:
            receipt = await hand_receipt(self.store, data["game_id"], data["hand"])
            left = deadline - self.clock()
            if ready(receipt, self.witnessed) or (receipt is not None and left <= 0):
                webhook["data"] = {**data, "receipt": receipt}
                return msgspec.json.encode(webhook)
            if left <= 0:
                return body
            await asyncio.sleep(min(POLL_S, left))
