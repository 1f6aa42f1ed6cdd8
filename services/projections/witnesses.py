"""The audit log's witnesses (``SPADES_LOG_WITNESSES``): each partition's latest signed
checkpoint offered to each witness with ``POST /add-checkpoint`` (C2SP ``tlog-witness``), and
the cosigned checkpoint kept (:data:`~services.store.schema.log_cosigned`) for the receipts.

A witness cosigns a checkpoint only when a consistency proof shows it extends the last one it
cosigned of that log: once it has, the log cannot show anyone who trusts the witness a history
other than the one the witness saw. The request names that older size (``old``): the one kept
here, or the one the witness answers with a 409 (it cosigned elsewhere, or its state was kept
and ours was not), and the offer is made again from there.

This runs beside the projection workers, as a task of its own, on what they committed: never
inside their transactions, so a slow or down witness holds up no batch. Each offer is bounded
by a timeout; a witness that failed is offered again after a wait that doubles up to
``retry_s`` (and at once, when it is back, with the latest checkpoint of the moment: there is
no backlog to send, only the newest tree). Only the partitions this process follows are
offered: their checkpoints are its to sign.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import httpx
import structlog

from services.runtime.settings import WitnessAddress
from services.store.audit_log import (
    Cosigned,
    StoredCheckpoint,
    cosigned,
    keep_cosigned,
    latest_checkpoint,
    partial_tree,
)
from services.store.database import Store
from services.transparency.checkpoint import add_checkpoint_request
from services.transparency.note import SIGNATURE_MARK, NoteError, open_note

log = structlog.get_logger("spades.witnessing")

POLL_S = 1.0
"""How often the latest checkpoints are looked at: a new one waits at most this for its
offer."""
FIRST_RETRY_S = 1.0
"""The first wait after a witness failed; each failure after it doubles it."""
MAX_ROUNDS = 3
"""Offers of one checkpoint to one witness in a row (each 409 names another ``old``)."""


class WitnessRefused(Exception):
    """The witness did not cosign: the message says what it answered, or what was wrong."""


@dataclass
class _Backoff:
    wait_s: float
    until: float


@dataclass
class Witnessing:
    """Offers each held partition's newest checkpoint to every witness until each has
    cosigned it; :meth:`run` until cancelled."""

    store: Store
    witnesses: Sequence[WitnessAddress]
    held: Callable[[], Iterable[int]]
    """The partitions this process follows now."""
    timeout_s: float = 5.0
    retry_s: float = 30.0
    poll_s: float = POLL_S
    clock: Callable[[], float] = time.monotonic
    transport: httpx.AsyncBaseTransport | None = None
    """How :meth:`run` reaches the witnesses (None: over the network)."""
    _failing: dict[tuple[int, str], _Backoff] = field(default_factory=dict)

    async def run(self) -> None:
        async with httpx.AsyncClient(timeout=self.timeout_s, transport=self.transport) as http:
            while True:
                try:
                    await self.offer_all(http)
                except Exception:  # the database in trouble: the workers say so; go on
                    log.exception("offering the log's checkpoints to its witnesses failed")
                # Polled: the workers' commits are in the database, not announced to us.
                await asyncio.sleep(self.poll_s)

    async def offer_all(self, http: httpx.AsyncClient) -> None:
        """One round: every held partition's latest signed checkpoint to every witness that
        has not cosigned it yet (and is not waiting out a failure), the witnesses at once."""
        for partition in sorted(self.held()):
            async with self.store.reading() as conn:
                head = await latest_checkpoint(conn, partition)
                kept = {c.witness: c for c in await cosigned(conn, partition)}
            if head is None or head.note is None:
                continue  # nothing signed: nothing a witness could cosign
            due = []
            for witness in self.witnesses:
                known = kept.get(witness.key.text())
                if known is not None and known.size >= head.size:
                    continue
                backoff = self._failing.get((partition, witness.url))
                if backoff is not None and self.clock() < backoff.until:
                    continue
                due.append(self._offered(http, witness, head, 0 if known is None else known.size))
            await asyncio.gather(*due)

    async def _offered(
        self, http: httpx.AsyncClient, witness: WitnessAddress, head: StoredCheckpoint, old: int
    ) -> None:
        key = (head.partition, witness.url)
        try:
            await self.offer(http, witness, head, old)
        except (WitnessRefused, httpx.HTTPError) as error:
            before = self._failing.get(key)
            wait = FIRST_RETRY_S if before is None else min(self.retry_s, before.wait_s * 2)
            self._failing[key] = _Backoff(wait, self.clock() + wait)
            log.warning(
                "a witness did not cosign the log's checkpoint; offered again later",
                witness=witness.url,
                partition=head.partition,
                size=head.size,
                error=str(error) or type(error).__name__,
                retry_in_s=wait,
            )
        else:
            self._failing.pop(key, None)

    async def offer(
        self, http: httpx.AsyncClient, witness: WitnessAddress, head: StoredCheckpoint, old: int
    ) -> Cosigned:
        """Offer ``head`` to ``witness`` as extending its tree of ``old`` (and again from the
        size a 409 names), check its cosignature and keep it; raises :class:`WitnessRefused`
        or ``httpx.HTTPError``."""
        assert head.note is not None
        for _ in range(MAX_ROUNDS):
            if old > head.size:
                raise WitnessRefused(
                    f"the witness cosigned a tree of {old} leaves; this log has {head.size}: "
                    "the log's database is behind what it showed the witness"
                )
            proof = await self._proof(head.partition, old, head.size)
            response = await http.post(
                f"{witness.url}/add-checkpoint",
                content=add_checkpoint_request(old, proof, head.note).encode(),
                headers={"Content-Type": "text/plain; charset=utf-8"},
            )
            if response.status_code == 409:
                try:
                    old = int(response.text.strip())
                except ValueError:
                    raise WitnessRefused(f"409 without a size: {response.text[:80]!r}") from None
                continue
            if response.status_code != 200:
                if response.status_code == 422:
                    log.error(
                        "a witness says the log's checkpoint does not extend the one it "
                        "cosigned: a fork, or the log rewritten",
                        witness=witness.url,
                        partition=head.partition,
                        size=head.size,
                    )
                reason = response.text.strip()[:200]
                raise WitnessRefused(f"{response.status_code}: {reason}")
            return await self._keep(witness, head, response.text)
        raise WitnessRefused(f"the witness answered 409 {MAX_ROUNDS} times in a row")

    async def _proof(self, partition: int, old: int, new: int) -> list[bytes]:
        async with self.store.reading() as conn:
            tree = await partial_tree(conn, partition, new, lambda t: t.consistency_proof(old, new))
        return tree.consistency_proof(old, new)

    async def _keep(self, witness: WitnessAddress, head: StoredCheckpoint, body: str) -> Cosigned:
        """The witness's cosignature line(s) from its answer, checked with its key, appended
        to the log's note and kept."""
        assert head.note is not None
        name = f"{SIGNATURE_MARK}{witness.key.name} "
        lines = [line + "\n" for line in body.splitlines() if line.startswith(name)]
        note = head.note + "".join(lines)
        try:
            seconds = open_note(note, [witness.key]).cosigned_at.get(witness.key.name)
        except NoteError as error:
            raise WitnessRefused(f"its answer is no cosignature of its key: {error}") from None
        if seconds is None:
            raise WitnessRefused("its answer holds no cosignature of its key")
        kept = Cosigned(head.partition, witness.key.text(), head.size, head.root, note, seconds)
        async with self.store.writing() as conn:
            await keep_cosigned(conn, kept)
        log.info(
            "a witness cosigned the log's checkpoint",
            witness=witness.url,
            partition=head.partition,
            size=head.size,
        )
        return kept
