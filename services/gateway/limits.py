"""Rate limits: a token bucket per caller, refused with 429 ``rate_limited``.

Who a caller is decides its bucket: a platform (by its key; all of one platform's keys share
one bucket), a seat (by its seat token, while the token is current: a platform's users each
have their own), or, for a request with neither (or with a token expired, revoked or not this
service's), the client's address. The caller is read as the routes read it: the
``Authorization`` header, and ``?access_token=`` on the event stream only. Every path is
limited but ``/healthz`` (the liveness probe) and the pages' static files (``/assets/``): the
pages, the API document, ``/readyz`` and ``/metrics`` too. ``/audit``, the one costly read,
also draws on an ``audit`` bucket of the same caller. ``SPADES_RATE_LIMIT`` sets them::

    platform=200/s,seat=20/s,anonymous=20/s,audit=2/s

``COUNT/UNIT`` (``s``, ``m`` or ``h``): a bucket holds ``COUNT`` requests and refills at that
rate, so a caller may burst ``COUNT`` at once and then keeps to the rate. A seat's bucket also
earns :data:`EARNED_PER_EVENT` requests for every event its game records (as far as the gateway
holds the game in memory): a seat that views and acts once a move is paced by its game, and
never runs dry however fast the table plays, while one that only asks keeps to the rate (its
game does not move for it). A name left out keeps
its default; ``off`` turns limiting off. Every limited answer carries the IETF
``RateLimit-Policy`` and ``RateLimit`` fields (draft-ietf-httpapi-ratelimit-headers, structured
fields: ``"platform";q=200;w=1`` and ``"platform";r=150;t=1``); a refusal carries
``Retry-After`` too.

The buckets live in the gateway's memory: each gateway limits on its own (docs/api.md, "Limits").
"""

from __future__ import annotations

import math
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.gateway.auth import PlatformKeys, SeatGrant, SeatTokens
from services.gateway.headers import header
from services.gateway.problems import problem_response

KINDS = ("platform", "seat", "anonymous", "audit")
DEFAULT_LIMITS = "platform=200/s,seat=20/s,anonymous=20/s,audit=2/s"
"""Enough for people and well-behaved programs; a flood from one caller gets 429s, and a
``make run`` server stays answering everyone else."""
EARNED_PER_EVENT = 2
"""What each event of a seat's game adds to the seat's bucket: the view and the action of the
README's loop (an action records one event at least; the other seats' moves add theirs)."""
MAX_BUCKETS = 100_000
"""Buckets kept at most; full ones (as good as new) go first when there are more."""

_ENTRY = re.compile(r"^(?P<name>[a-z]+)=(?P<count>[0-9]{1,9})/(?P<unit>s|m|h)$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600}
_AUDIT_PATH = re.compile(r"^/v1/games/[^/]+/audit$")
STREAM_PATH = re.compile(r"^/v1/games/[^/]+/events/stream$")
"""The one route that takes a token as ``?access_token=`` (an ``EventSource`` sets no
headers)."""
UNLIMITED_PATHS = frozenset({"/healthz"})
UNLIMITED_PREFIXES = ("/assets/",)
"""The pages' static files: a page names a dozen at once (its modules, its style sheet), each a
file the gateway holds, cached by the browser (a page itself is limited)."""
"""Paths never limited: the liveness probe, which must answer while a flood is refused."""


@dataclass(frozen=True, slots=True)
class Rate:
    """``count`` requests per ``window_s`` seconds, bursting up to ``count``."""

    count: int
    window_s: int

    @property
    def per_s(self) -> float:
        return self.count / self.window_s


def parse_rate_limits(text: str) -> dict[str, Rate] | None:
    """``SPADES_RATE_LIMIT`` as a rate per kind of caller, or None for ``off``; raises
    ValueError naming what is wrong."""
    text = text.strip()
    if text.lower() == "off":
        return None
    rates = _entries(DEFAULT_LIMITS)
    if text:
        rates.update(_entries(text))
    return rates


def _entries(text: str) -> dict[str, Rate]:
    rates: dict[str, Rate] = {}
    for entry in (part.strip() for part in text.split(",") if part.strip()):
        match = _ENTRY.match(entry)
        if match is None or match["name"] not in KINDS or int(match["count"]) < 1:
            raise ValueError(
                f"SPADES_RATE_LIMIT: {entry!r} is not NAME=COUNT/UNIT with NAME one of "
                f"{', '.join(KINDS)}, COUNT at least 1 and UNIT s, m or h (or the whole: off)"
            )
        rates[match["name"]] = Rate(int(match["count"]), _UNIT_S[match["unit"]])
    return rates


@dataclass(slots=True)
class Bucket:
    tokens: float
    stamp: float
    progress: int = 0
    """The version of the caller's game when it last drew (seats only)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """One draw on a bucket: allowed or not, and what the headers say."""

    allowed: bool
    remaining: int
    reset_s: int
    """Seconds until the bucket is full again."""
    retry_after_s: int
    """Seconds until one request is allowed (0 when allowed now)."""


@dataclass
class Buckets:
    """Token buckets of one kind, by caller."""

    rate: Rate
    held: OrderedDict[str, Bucket] = field(default_factory=OrderedDict)

    def draw(self, caller: str, now: float, progress: int | None = None) -> Verdict:
        """Take one request from ``caller``'s bucket; ``progress`` is the version of the
        caller's game (a seat's), whose every event since the last draw earns
        :data:`EARNED_PER_EVENT` requests back."""
        capacity, per_s = self.rate.count, self.rate.per_s
        bucket = self.held.pop(caller, None)
        if bucket is None:
            bucket = Bucket(float(capacity), now, progress or 0)
        else:
            earned = (now - bucket.stamp) * per_s
            if progress is not None and progress > bucket.progress:
                earned += (progress - bucket.progress) * EARNED_PER_EVENT
                bucket.progress = progress
            bucket.tokens = min(capacity, bucket.tokens + earned)
            bucket.stamp = now
        allowed = bucket.tokens >= 1
        if allowed:
            bucket.tokens -= 1
        self.held[caller] = bucket  # most recently used last
        self._prune(now)
        short = max(0.0, 1 - bucket.tokens)
        return Verdict(
            allowed=allowed,
            remaining=int(bucket.tokens),
            reset_s=math.ceil((capacity - bucket.tokens) / per_s),
            retry_after_s=0 if allowed else max(1, math.ceil(short / per_s)),
        )

    def _prune(self, now: float) -> None:
        if len(self.held) <= MAX_BUCKETS:
            return
        capacity, per_s = self.rate.count, self.rate.per_s
        for caller, bucket in list(self.held.items()):
            if bucket.tokens + (now - bucket.stamp) * per_s >= capacity:
                del self.held[caller]
        while len(self.held) > MAX_BUCKETS:
            self.held.popitem(last=False)


Identify = Callable[[Scope], tuple[str, str]]
"""A request's caller: its kind (platform, seat, anonymous) and who it is within the kind."""
Progress = Callable[[str], int | None]
"""A seat caller's (``game_id:seat``) game version, as the gateway holds it; None if it holds
none."""


def _no_progress(_caller: str) -> int | None:
    return None


class RateLimit:
    """Pure ASGI middleware: draw on the caller's bucket (and the audit bucket for ``/audit``)
    before anything else is done; over the limit, answer 429 ``rate_limited``."""

    def __init__(
        self,
        app: ASGIApp,
        rates: dict[str, Rate] | None,
        identify: Identify,
        clock: Callable[[], float] = time.monotonic,
        progress: Progress = _no_progress,
    ) -> None:
        self.app = app
        self.buckets = {kind: Buckets(rate) for kind, rate in (rates or {}).items()}
        self.identify = identify
        self.clock = clock
        self.progress = progress

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.buckets or scope["type"] != "http" or _unlimited(scope["path"]):
            await self.app(scope, receive, send)
            return
        kind, caller = self.identify(scope)
        now = self.clock()
        pace = self.progress(caller) if kind == "seat" else None
        drawn = [(kind, self.buckets[kind].draw(caller, now, pace))]
        if drawn[0][1].allowed and _AUDIT_PATH.match(scope["path"]):
            drawn.append(("audit", self.buckets["audit"].draw(f"{kind}:{caller}", now)))
        headers = self._headers(drawn)
        refused = next((verdict for _, verdict in drawn if not verdict.allowed), None)
        if refused is not None:
            headers["Retry-After"] = str(refused.retry_after_s)
            detail = f"too many requests: retry in {refused.retry_after_s} s"
            await problem_response("rate_limited", detail, headers)(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *message.get("headers", []),
                    *((name.lower().encode(), value.encode()) for name, value in headers.items()),
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _headers(self, drawn: list[tuple[str, Verdict]]) -> dict[str, str]:
        policies, states = [], []
        for kind, verdict in drawn:
            rate = self.buckets[kind].rate
            policies.append(f'"{kind}";q={rate.count};w={rate.window_s}')
            states.append(f'"{kind}";r={verdict.remaining};t={verdict.reset_s}')
        return {"RateLimit-Policy": ", ".join(policies), "RateLimit": ", ".join(states)}


def _never_revoked(_grant: SeatGrant) -> bool:
    return False


def caller_of(
    keys: Callable[[], PlatformKeys | None],
    tokens: Callable[[], SeatTokens | None],
    revoked: Callable[[SeatGrant], bool] = _never_revoked,
) -> Identify:
    """Who a request comes from, by its bearer credential (or, on the event stream,
    ``access_token``): a platform's key, a seat's current token, else the client's address.
    A token that is expired, or ``revoked`` (as far as the gateway knows without reading:
    the game in memory has issued its seat a newer one), counts as no token: a thief or a
    replaced player spends its own address's budget, never the seat's."""

    def identify(scope: Scope) -> tuple[str, str]:
        credential = _credential(scope)
        if credential:
            platform_keys, seat_tokens = keys(), tokens()
            platform = platform_keys.platform_of(credential) if platform_keys else None
            if platform is not None:
                return "platform", platform
            grant = seat_tokens.read(credential) if seat_tokens else None
            if (
                grant is not None
                and seat_tokens is not None
                and not grant.expired(seat_tokens.now())
                and not revoked(grant)
            ):
                return "seat", f"{grant.game_id}:{grant.seat}"
        return "anonymous", address_of(scope)

    return identify


def address_of(scope: Scope) -> str:
    """The client's address (the one ``X-Forwarded-For`` gives, from a trusted proxy)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def _credential(scope: Scope) -> str | None:
    authorization = header(scope, b"authorization")
    if authorization is not None:
        scheme, _, credential = authorization.strip().partition(" ")
        return credential.strip() if scheme.lower() == "bearer" else None
    if not STREAM_PATH.match(scope["path"]):
        return None
    query = bytes(scope.get("query_string", b"")).decode("latin-1")
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if name == "access_token":
            return str(value)
    return None


DEFAULT_STREAMS = "platform=256,seat=4,anonymous=16"
"""Open event streams per caller: a seat needs one (a few tabs), an address a table's worth
of spectators, a platform's server many."""
DEFAULT_WAITS = "platform=32,seat=2,anonymous=2"
"""``min_version`` reads waiting at once per caller: a client waits for its own last write."""
_CAP = re.compile(r"^(?P<name>[a-z]+)=(?P<count>[0-9]{1,9})$")
CALLERS = ("platform", "seat", "anonymous")


def parse_caps(text: str, default: str, setting: str) -> dict[str, int]:
    """``NAME=COUNT`` entries (``platform``, ``seat``, ``anonymous``) over ``default``;
    raises ValueError naming ``setting`` and what is wrong."""
    caps: dict[str, int] = {}
    for part in (default, text):
        for entry in (piece.strip() for piece in part.split(",") if piece.strip()):
            match = _CAP.match(entry)
            if match is None or match["name"] not in CALLERS or int(match["count"]) < 1:
                raise ValueError(
                    f"{setting}: {entry!r} is not NAME=COUNT with NAME one of "
                    f"{', '.join(CALLERS)} and COUNT at least 1"
                )
            caps[match["name"]] = int(match["count"])
    return caps


class Slots:
    """How many of something (open streams, waiting reads) each caller holds, up to a cap
    per kind of caller. :meth:`take` counts one if there is room; :meth:`give_back` frees it."""

    def __init__(self, caps: dict[str, int], what: str) -> None:
        self.caps = caps
        self.what = what
        self.held: dict[tuple[str, str], int] = {}

    def take(self, kind: str, who: str) -> bool:
        key = (kind, who)
        held = self.held.get(key, 0)
        if held >= self.caps[kind]:
            return False
        self.held[key] = held + 1
        return True

    def give_back(self, kind: str, who: str) -> None:
        key = (kind, who)
        held = self.held.get(key, 0) - 1
        if held > 0:
            self.held[key] = held
        else:
            self.held.pop(key, None)

    def refusal(self, kind: str) -> str:
        return f"at most {self.caps[kind]} {self.what} at once for a {kind} caller"


def _unlimited(path: str) -> bool:
    return path in UNLIMITED_PATHS or path.startswith(UNLIMITED_PREFIXES)
