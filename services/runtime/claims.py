"""Which process of a kind works which partitions: leases in a NATS key-value bucket.

Every process that works partitions (engines, projections, webhooks, timers, the round watch)
runs a :class:`Claims` for its kind. Its members share the kind's K partitions so that each is
worked by exactly one of them while it lives, and by another within seconds of its end. All of
it is JetStream's own compare-and-set on the bucket :data:`BUCKET`; nothing here votes or keeps
a log of its own.

- **Membership.** A member puts ``<kind>.members.<member>`` every :attr:`Claims.renew_s`. The
  bucket keeps a key for :attr:`Claims.lease_s` after its last write (its ``max_age``), so the
  live members of a kind are the member keys the bucket holds (one stream-info request lists
  them).
- **Leases.** A partition is held under ``<kind>.partitions.<p>``: made only if absent
  (``create``), renewed only at the revision its holder wrote (``update(last=...)``), deleted
  by its holder at that revision. A holder killed renews nothing: its lease is gone
  :attr:`Claims.lease_s` after its last renewal and another member takes it.
- **Balance.** Every member works out the same assignment from the live members alone
  (:func:`assignment`): each partition goes to the member that ranks it highest by rendezvous
  hashing (highest random weight) among those not yet given their share (K/N, rounded up), so
  each of N members prefers K/N partitions give or take one, and a member joining or leaving
  moves little more than its share. A member claims what it is assigned; gives up what is
  assigned to another live member once that member has been seen for two renewals; and claims
  any partition no one has held for :data:`UNHELD_TICKS` renewals (its member is slow, or just
  left).
- **Fencing.** A member that cannot renew within its lease (NATS unreachable, a paused process)
  treats every lease as lost and stops working its partitions at once, before another can hold
  them. What the work writes is fenced again where it lands (positions advance only in order,
  deliveries are claimed, timeouts carry command ids, appends are optimistic): a lease decides
  who works, never what is right.

``on_gain(p)`` is awaited before the member counts the partition as its own; ``on_lose(p)`` is
awaited, and the work of ``p`` has stopped, before its lease is deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import nats.errors
import nats.js.errors
import structlog
from nats.js import JetStreamContext, api
from nats.js.kv import KeyValue

from services.runtime.broker_users import CLAIMS_BUCKET
from services.runtime.metrics import FAILOVERS, HELD, LEASE_RENEWALS

log = structlog.get_logger("spades.claims")

BUCKET = CLAIMS_BUCKET
"""The key-value bucket of every kind's members and leases."""
LEASE_S = 5.0
"""How long a lease (and a membership) outlives its last renewal: how soon a killed member's
partitions are taken over, at most, plus a renewal."""
RENEW_S = 1.0
UNHELD_TICKS = 3
"""Renewals a partition may go unheld before any member takes it, assigned to it or not."""

Work = Callable[[int], Awaitable[None]]


def member_id() -> str:
    """A new member's name: host, process and a random part (a restarted process is another
    member), in the characters a key may hold."""
    host = re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname())[:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


def rank(kind: str, partition: int, member: str) -> bytes:
    """A member's weight for a partition (rendezvous hashing): highest wins."""
    return hashlib.sha256(f"{kind}/{partition}/{member}".encode()).digest()


def assignment(kind: str, count: int, members: set[str]) -> dict[int, str]:
    """Which member works each of ``count`` partitions: the same for every member that sees
    the same live members (see the module's docstring)."""
    if not members:
        return {}
    share = -(-count // len(members))
    given: dict[str, int] = dict.fromkeys(members, 0)
    assigned: dict[int, str] = {}
    for partition in range(count):
        ranked = sorted(members, key=lambda member: rank(kind, partition, member), reverse=True)
        chosen = next(member for member in ranked if given[member] < share)
        given[chosen] += 1
        assigned[partition] = chosen
    return assigned


def bucket_config(replicas: int = 1, lease_s: float = LEASE_S) -> api.KeyValueConfig:
    return api.KeyValueConfig(
        bucket=BUCKET,
        description="spades: which process works which partitions (leases), and who is alive",
        history=1,
        ttl=lease_s,
        storage=api.StorageType.FILE,
        replicas=replicas,
    )


async def claims_bucket(js: JetStreamContext, replicas: int = 1) -> KeyValue:
    """The bucket, made if it is not there yet (by whichever member comes first)."""
    try:
        return await js.key_value(BUCKET)
    except nats.js.errors.BucketNotFoundError:
        pass
    try:
        return await js.create_key_value(bucket_config(replicas))
    except nats.js.errors.BadRequestError:  # another member made it meanwhile
        return await js.key_value(BUCKET)


@dataclass
class Lease:
    revision: int
    since: float = field(default_factory=time.monotonic)


class Claims:
    """One member's share of a kind's partitions (see the module's docstring)."""

    def __init__(
        self,
        js: JetStreamContext,
        kind: str,
        count: int,
        on_gain: Work,
        on_lose: Work,
        *,
        member: str | None = None,
        replicas: int = 1,
        lease_s: float = LEASE_S,
        renew_s: float = RENEW_S,
    ) -> None:
        if lease_s <= 2 * renew_s:
            raise ValueError("a lease must outlive two renewals")
        self.js = js
        self.kind = kind
        self.count = count
        """How many partitions the kind shares (numbered from 0)."""
        self.member = member or member_id()
        self.replicas = replicas
        self.lease_s = lease_s
        self.renew_s = renew_s
        self._on_gain = on_gain
        self._on_lose = on_lose
        self.held: dict[int, Lease] = {}
        self.members: set[str] = set()
        self._seen: dict[str, int] = {}
        """Members by the renewals in a row they have been seen live."""
        self._unheld: dict[int, int] = {}
        """Partitions by the renewals in a row they were found unheld and not claimed here."""
        self._renewed_at = time.monotonic()
        self._kv: KeyValue | None = None
        self.changed = asyncio.Event()
        """Set whenever a partition is gained or lost (for whoever waits on it)."""
        self.log = log.bind(kind=kind, member=self.member)

    def _key(self, partition: int) -> str:
        return f"{self.kind}.partitions.{partition}"

    @property
    def _member_key(self) -> str:
        return f"{self.kind}.members.{self.member}"

    async def run(self) -> None:
        """Renew, balance and take over, every :attr:`renew_s`, until cancelled; then give
        every partition up (its work stopped first)."""
        try:
            while True:
                try:
                    await self.tick()
                except (nats.errors.Error, nats.js.errors.Error, TimeoutError, OSError) as error:
                    self.log.warning("claims not renewed", error=repr(error))
                if self.held and time.monotonic() - self._renewed_at > self.lease_s - self.renew_s:
                    self.log.warning("leases not renewed in time: giving every partition up")
                    await self._lose_all()
                await asyncio.sleep(self.renew_s)
        finally:
            await asyncio.shield(self._release_all())

    async def tick(self) -> None:
        """One round: say this member lives, renew its leases, give up and take partitions."""
        kv = self._kv or await self._bucket()
        await kv.put(self._member_key, b"")
        members, present = await self._look()
        self.members = members | {self.member}
        self._seen = {m: self._seen.get(m, 0) + 1 for m in self.members}
        for partition in list(self.held):
            await self._renew(kv, partition)
        self._renewed_at = time.monotonic()
        assigned = assignment(self.kind, self.count, self.members)
        for partition in range(self.count):
            owner = assigned.get(partition)
            if partition in self.held:
                if owner != self.member and self._seen.get(owner or "", 0) >= 2:
                    await self._give_up(kv, partition, f"assigned to {owner}")
                continue
            mine = owner == self.member
            if mine or self._unheld.get(partition, 0) >= UNHELD_TICKS:
                await self._claim(kv, partition, taken_over=not mine)
            elif partition in present:
                self._unheld.pop(partition, None)
            else:
                self._unheld[partition] = self._unheld.get(partition, 0) + 1

    async def _bucket(self) -> KeyValue:
        self._kv = await claims_bucket(self.js, self.replicas)
        return self._kv

    async def _look(self) -> tuple[set[str], set[int]]:
        """The kind's live members, and the partitions whose lease key the bucket holds (held,
        or given up less than a lease ago): one request."""
        prefix = f"$KV.{BUCKET}.{self.kind}."
        info = await self.js.stream_info(f"KV_{BUCKET}", subjects_filter=f"{prefix}>")
        members: set[str] = set()
        present: set[int] = set()
        for subject in info.state.subjects or {}:
            group, _, name = subject[len(prefix) :].partition(".")
            if group == "members":
                members.add(name)
            elif group == "partitions" and name.isdigit():
                present.add(int(name))
        return members, present

    async def _renew(self, kv: KeyValue, partition: int) -> None:
        lease = self.held[partition]
        try:
            lease.revision = await kv.update(
                self._key(partition), self.member.encode(), last=lease.revision
            )
            LEASE_RENEWALS.labels(self.kind).inc()
        except nats.js.errors.KeyWrongLastSequenceError:
            self.log.warning("lease lost: another member holds the partition", partition=partition)
            await self._lose(partition)

    async def _claim(self, kv: KeyValue, partition: int, *, taken_over: bool) -> None:
        try:
            revision = await kv.create(self._key(partition), self.member.encode())
        except (
            nats.js.errors.KeyWrongLastSequenceError,  # held by another member
            nats.js.errors.KeyNotFoundError,  # gone between create's two looks: next time
            nats.js.errors.KeyDeletedError,
        ):
            self._unheld.pop(partition, None)
            return
        self._unheld.pop(partition, None)
        self.held[partition] = Lease(revision)
        try:
            await self._on_gain(partition)
        except BaseException:
            self.held.pop(partition, None)
            with contextlib.suppress(nats.errors.Error, nats.js.errors.Error):
                await kv.delete(self._key(partition), last=revision)
            raise
        HELD.labels(self.kind).set(len(self.held))
        if taken_over:
            FAILOVERS.labels(self.kind).inc()
        self.log.info("partition claimed", partition=partition, taken_over=taken_over)
        self.changed.set()

    async def _give_up(self, kv: KeyValue, partition: int, why: str) -> None:
        lease = self.held.get(partition)
        await self._lose(partition)
        if lease is not None:
            with contextlib.suppress(nats.js.errors.KeyWrongLastSequenceError):
                await kv.delete(self._key(partition), last=lease.revision)
        self.log.info("partition given up", partition=partition, why=why)

    async def _lose(self, partition: int) -> None:
        if self.held.pop(partition, None) is None:
            return
        HELD.labels(self.kind).set(len(self.held))
        self.changed.set()
        await self._on_lose(partition)

    async def _lose_all(self) -> None:
        for partition in list(self.held):
            await self._lose(partition)

    async def _release_all(self) -> None:
        """Stop working every partition, then delete the leases (so that others take them
        at their next renewal rather than when the leases run out)."""
        leases = dict(self.held)
        await self._lose_all()
        if self._kv is None:
            return
        for partition, lease in leases.items():
            with contextlib.suppress(Exception):
                await self._kv.delete(self._key(partition), last=lease.revision)

    async def until_held(self, count: int, timeout_s: float) -> None:
        """Wait until this member holds at least ``count`` partitions (tests, start-up)."""
        async with asyncio.timeout(timeout_s):
            while len(self.held) < count:
                self.changed.clear()
                await self.changed.wait()
