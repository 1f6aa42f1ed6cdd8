"""A platform's engine commands a minute (``SPADES_MAX_COMMANDS_PER_MINUTE``): one token bucket
per platform in each engine, drawn on by every command the engine decides for the platform's
games.

**Where.** In the engine, not the gateway: the engine is where every command of a game arrives,
whoever sent it: the players' actions through the gateways, a league round's game creations and
seatings (one request to start a round is up to ``SPADES_MAX_ROUND_TABLES`` times (1 + seats)
commands), the timers' timeouts, and under ``auto`` the bots' moves for away seats (a timeout
that carries the bot's actions). The platform is the game's (``GameCreated.platform``, in the
state the engine holds anyway), or the creation request's for a new game.

**Whose commands are refused.** A player's own command (an action, taking a seat, a token
issued again, a seat marked away, a game of its own created) past the budget is refused,
not recorded, with ``rate_limited`` (429 at the gateway), and a retry with the same
``Idempotency-Key`` is decided once the budget allows. The service's own commands for the
platform (a timeout, a round's game creation and its seatings) are never refused nor delayed:
refusing one would stall a game (a timeout is shot once per deadline; a round's table half
seated waits for its round to be started again), and delaying one in the engine would hold a
command worker and the game's lock meanwhile, which every other platform's commands need too.
They are admitted and counted: the bucket goes into debt, so the platform's own commands are
the ones refused until the debt is paid back at the budget's rate. The debt stops at one burst
below empty (past that a command of the service is admitted without being counted), so that a
platform's own commands are refused for at most a burst's refill (6 s) once the service's stop;
what the service does beyond that is bounded by the other quotas: a timeout per turn
(``SPADES_MIN_TURN_S``) of each game going on (``SPADES_MAX_GAMES_GOING_ON``).

**Several engines.** Each engine holds some of the game stream's partitions and has buckets of
its own: a platform's games spread over the partitions by their ids, so across N engines the
platform gets up to N times its budget (as a caller gets a gateway's rate limit from each of N
gateways). Games of no platform (a server without platform keys: one platform, local
development) have no budget: there is no other platform to keep their work from.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

BURST_SHARE = 10
"""A bucket holds a tenth of a minute's commands: a platform's burst is 6 s of its budget."""
MAX_BUCKETS = 4096
"""Buckets held at once (platforms are a deployment's few keys); the least recently used one
goes first, a full bucket being no different from a new one."""


@dataclass(slots=True)
class _Bucket:
    tokens: float
    stamp: float


class CommandBudget:
    """Token buckets of engine commands, by platform."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.per_s = per_minute / 60
        self.capacity = max(1.0, per_minute / BURST_SHARE)
        self._clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def _refilled(self, platform: str) -> _Bucket:
        now = self._clock()
        bucket = self._buckets.pop(platform, None)
        if bucket is None:
            bucket = _Bucket(self.capacity, now)
        else:
            bucket.tokens = min(self.capacity, bucket.tokens + (now - bucket.stamp) * self.per_s)
            bucket.stamp = now
        self._buckets[platform] = bucket  # most recently used last
        if len(self._buckets) > MAX_BUCKETS:
            self._buckets.popitem(last=False)
        return bucket

    def draw(self, platform: str) -> int:
        """One of the platform's own commands: 0 when it is admitted (and counted), else the
        seconds until one would be."""
        bucket = self._refilled(platform)
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0
        return max(1, math.ceil((1 - bucket.tokens) / self.per_s))

    def charge(self, platform: str) -> None:
        """One of the service's commands for the platform: always admitted, counted down to one
        burst below empty."""
        bucket = self._refilled(platform)
        bucket.tokens = max(-self.capacity, bucket.tokens - 1)
