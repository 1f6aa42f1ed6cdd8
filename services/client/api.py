"""``SpadesClient``: the HTTP API of docs/api.md as typed async methods.

>>> async def play_a_bid() -> None:  # doctest: +SKIP
...     async with SpadesClient("http://127.0.0.1:8000") as client:
...         game = await client.create_game({"preset": "partnership"})
...         seats = [await client.take_seat(game.game_id, name) for name in "abcd"]
...         view = await client.view(game.game_id, seats[1].token)
...         await client.act(game.game_id, seats[1].token, view.legal[0], idempotency_key="k1")

Every error answer becomes an :class:`ApiError` read from its problem+json body. A 503 (the
engine did not answer in time) is retried a bounded number of times, after the ``Retry-After``
the server gives, for reads and for actions sent with an idempotency key (the same key every
time, so nothing is applied twice); a 429 (over the rate limit: nothing was done) is retried the
same way for every request; anything else is raised at once.

A client given the platform's ``api_key`` sends it with every request that carries no seat
token: the platform reads its own (private) games and leagues, seats its users and issues their
tokens again.

A client given a :class:`~services.client.log.LogWatch` (the log's keys, and what an earlier
session kept of it) checks the audit log: every checkpoint it is shown, by
:meth:`SpadesClient.log_checkpoint` or in a receipt (:meth:`SpadesClient.hand_receipt`,
:meth:`SpadesClient.check_receipt` for one that came in a hand record, an SSE ``receipt`` frame
or a webhook) is signed by the log's key and, when it is newer than the last one it verified,
proven to extend it (``GET /v1/log/{p}/proofs/consistency``) before it is trusted; a
:class:`~services.client.log.ForkError` when it does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import time
from collections.abc import AsyncGenerator, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from contracts.answers import (
    Acted,
    EventPage,
    GameList,
    HandRecords,
    HandRecordWithReceipt,
    Health,
    Readiness,
    Scoreboard,
    ScoredHandRecord,
    SeatTaken,
)
from contracts.audit_log import ConsistencyProof, Receipt
from contracts.wire import EventRecord
from domain.views import PublicState, SeatView
from services.audit.report import AuditReport as Audit
from services.client.log import ForkError, LogError, LogWatch, Verified, included
from services.client.models import Action
from services.client.sse import ServerSentEvent, parse_server_sent_events

__all__ = ["ApiError", "ClientError", "ForkError", "LogError", "LogWatch", "SpadesClient"]

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_RETRIES = 3
MAX_RETRY_AFTER_S = 30.0
"""A longer ``Retry-After`` is cut to this: the caller asked for a bounded wait."""
DEFAULT_RETRY_AFTER_S = 1.0
PROBLEM_JSON = "application/problem+json"

_encoder = msgspec.json.Encoder()


class ClientError(Exception):
    """Base of the client's own errors (transport errors stay ``httpx.HTTPError``)."""


class ApiError(ClientError):
    """An error answer: its status and the problem+json ``code``, ``title`` and ``detail``."""

    def __init__(
        self,
        status: int,
        code: str,
        title: str = "",
        detail: str = "",
        *,
        retry_after: float | None = None,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {detail or title}")
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.retry_after = retry_after
        self.problem: Mapping[str, Any] = problem or {}

    @classmethod
    def from_response(cls, response: httpx.Response) -> ApiError:
        """Read a problem+json answer; anything else keeps its status and a generic code."""
        problem: Any = None
        with contextlib.suppress(msgspec.DecodeError):
            problem = msgspec.json.decode(response.content)
        retry_after = retry_after_seconds(response.headers.get("Retry-After"))
        if not isinstance(problem, dict) or not isinstance(problem.get("code"), str):
            text = response.text[:200]
            return cls(
                response.status_code,
                f"http_{response.status_code}",
                response.reason_phrase,
                text,
                retry_after=retry_after,
            )
        return cls(
            response.status_code,
            problem["code"],
            str(problem.get("title") or ""),
            str(problem.get("detail") or ""),
            retry_after=retry_after,
            problem=problem,
        )


class UnexpectedResponse(ClientError):
    """A success answer whose body is not the shape docs/api.md gives."""


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header as seconds from now: delta-seconds or an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _bearer(secret: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"} if secret else {}


def keyed(headers: dict[str, str], idempotency_key: str | None) -> dict[str, str]:
    """``headers`` with the ``Idempotency-Key``, when there is one."""
    return headers if idempotency_key is None else {**headers, "Idempotency-Key": idempotency_key}


def _min_version(version: int | None) -> dict[str, int] | None:
    return None if version is None else {"min_version": version}


def _game_path(game_id: str, *rest: str) -> str:
    return "/".join(["/v1/games", quote(game_id, safe=""), *rest])


class SpadesClient:
    """An async client of one Spades server. Use it as an async context manager, or call
    :meth:`aclose` when done.

    ``api_key`` is the platform key for creating games (needed when the server sets
    ``SPADES_API_KEYS``). ``retries`` bounds the extra tries of a 503. ``log`` holds the audit
    log's keys and the checkpoints verified so far (share it between sessions, or keep its
    :meth:`~services.client.log.LogWatch.kept` notes): the log methods need it.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        transport: httpx.AsyncBaseTransport | None = None,
        log: LogWatch | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.retries = retries
        self.log = log
        self._log_lock = asyncio.Lock()
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            headers={"Accept": "application/json"},
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # ----------------------------------------------------------------------- games and seats

    async def create_game(
        self,
        rules: Mapping[str, Any],
        dealer: int | None = None,
        entropy: str | None = None,
        idempotency_key: str | None = None,
        *,
        visibility: str | None = None,
        seating: str | None = None,
        clock: Mapping[str, Any] | None = None,
    ) -> PublicState:
        """Create a game (``POST /v1/games``) and return its public state. With
        ``idempotency_key`` a 503 is retried, and every retry gets the same game.
        ``visibility`` (`public`, `private`) and ``seating`` (`platform`, `open`) left out take
        the server's defaults; ``clock`` (``{"turn_s": 20, "on_timeout": "auto", ...}``) puts
        the game on the clock."""
        body: dict[str, Any] = {"rules": dict(rules)}
        if clock is not None:
            body["clock"] = dict(clock)
        for name, value in (
            ("dealer", dealer),
            ("entropy", entropy),
            ("visibility", visibility),
            ("seating", seating),
        ):
            if value is not None:
                body[name] = value
        response = await self.request(
            "POST",
            "/v1/games",
            body=body,
            headers=keyed({}, idempotency_key),
            retry=idempotency_key is not None,
        )
        return self.decode(response, PublicState)

    async def take_seat(
        self,
        game_id: str,
        player: str,
        seat: int | None = None,
        entropy: str | None = None,
        idempotency_key: str | None = None,
    ) -> SeatTaken:
        """Take a seat (the first free one when ``seat`` is None); the answer holds its token
        and when it expires. With ``idempotency_key`` a 503 is retried, and every retry gets the
        same seat (without a platform key, the key must be at least 32 characters)."""
        body: dict[str, Any] = {"player": player}
        if seat is not None:
            body["seat"] = seat
        if entropy is not None:
            body["entropy"] = entropy
        response = await self.request(
            "POST",
            _game_path(game_id, "seats"),
            body=body,
            headers=keyed({}, idempotency_key),
            retry=idempotency_key is not None,
        )
        return self.decode(response, SeatTaken)

    async def reissue_token(
        self,
        game_id: str,
        seat: int,
        player: str | None = None,
        idempotency_key: str | None = None,
    ) -> SeatTaken:
        """Issue the seat's token again (``POST /v1/games/{id}/seats/{seat}/token``, the game's
        platform only): every earlier token of the seat is revoked; ``player`` seats a
        substitute. With ``idempotency_key`` a 503 is retried and gets the same issue."""
        body = {"player": player} if player is not None else None
        response = await self.request(
            "POST",
            _game_path(game_id, "seats", str(seat), "token"),
            body=body,
            headers=keyed({}, idempotency_key),
            retry=idempotency_key is not None,
        )
        return self.decode(response, SeatTaken)

    async def state(self, game_id: str) -> PublicState:
        """The public state of a game."""
        return self.decode(await self.request("GET", _game_path(game_id)), PublicState)

    async def view(self, game_id: str, token: str) -> SeatView:
        """The seat's view: the public state, its cards once looked at, and ``legal``."""
        response = await self.request("GET", _game_path(game_id, "view"), headers=_bearer(token))
        return self.decode(response, SeatView)

    async def act(
        self,
        game_id: str,
        token: str,
        action: Action | Mapping[str, Any],
        idempotency_key: str | None = None,
        expected_version: int | None = None,
    ) -> Acted:
        """Send one action for the token's seat. With ``idempotency_key`` a 503 is retried with
        the same key; the same key and body always get the first answer."""
        body: dict[str, Any] = (
            dict(action) if isinstance(action, Mapping) else msgspec.to_builtins(action)
        )
        if expected_version is not None:
            body["expected_version"] = expected_version
        headers = keyed(_bearer(token), idempotency_key)
        response = await self.request(
            "POST",
            _game_path(game_id, "actions"),
            body=body,
            headers=headers,
            retry=idempotency_key is not None,
        )
        return self.decode(response, Acted)

    # ----------------------------------------------------------------------- events

    async def events(
        self, game_id: str, token: str | None = None, after: int = 0, limit: int | None = None
    ) -> list[EventRecord]:
        """Events after stream position ``after`` (a game version): public ones redacted, and
        with a seat token that seat's private ones too. One page: at most ``limit`` events, or
        the server's page size; ask again after the last one's ``version`` for more."""
        params: dict[str, int] = {"after": after}
        if limit is not None:
            params["limit"] = limit
        response = await self.request(
            "GET", _game_path(game_id, "events"), params=params, headers=_bearer(token)
        )
        return self.decode(response, EventPage).events

    async def stream(
        self,
        game_id: str,
        token: str | None = None,
        last_event_id: str | int | None = None,
        *,
        comments: bool = False,
    ) -> AsyncGenerator[ServerSentEvent, None]:
        """Follow the game's server-sent events: a ``state`` event first, then every event with
        its stream position as ``id``. Keep-alive comments are yielded too when ``comments``.

        It ends when the server closes the stream; to resume, pass the last ``id`` seen as
        ``last_event_id``. Close it with ``contextlib.aclosing`` when leaving early.
        """
        headers = {"Accept": "text/event-stream", **_bearer(token or self.api_key)}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        timeout = httpx.Timeout(self._http.timeout.connect, read=None)
        async with self._http.stream(
            "GET", _game_path(game_id, "events", "stream"), headers=headers, timeout=timeout
        ) as response:
            if response.is_error:
                await response.aread()
                raise ApiError.from_response(response)
            async for message in parse_server_sent_events(
                response.aiter_lines(), comments=comments
            ):
                yield message

    # ----------------------------------------------------------------------- read models

    async def hands(self, game_id: str, min_version: int | None = None) -> list[ScoredHandRecord]:
        """The records of every completed hand. The read models follow the game a moment
        behind; ``min_version`` waits (briefly) until they have reached that game version."""
        response = await self.request(
            "GET", _game_path(game_id, "hands"), params=_min_version(min_version)
        )
        return self.decode(response, HandRecords).hands

    async def hand(
        self, game_id: str, number: int, min_version: int | None = None
    ) -> HandRecordWithReceipt:
        """The record of completed hand ``number`` (1-based), with its score's lines and its
        receipt from the audit log (None until the log holds the hand)."""
        response = await self.request(
            "GET", _game_path(game_id, "hands", str(number)), params=_min_version(min_version)
        )
        return self.decode(response, HandRecordWithReceipt)

    async def scoreboard(self, game_id: str, min_version: int | None = None) -> Scoreboard:
        """Scores hand by hand, totals and winners (see :meth:`hands` for ``min_version``)."""
        response = await self.request(
            "GET", _game_path(game_id, "scoreboard"), params=_min_version(min_version)
        )
        return self.decode(response, Scoreboard)

    async def audit(self, game_id: str) -> Audit:
        """The replay audit of the game's history."""
        return self.decode(await self.request("GET", _game_path(game_id, "audit")), Audit)

    async def games(
        self,
        status: str | None = None,
        player: str | None = None,
        league: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> GameList:
        """One page of the game list; pass ``next_cursor`` back as ``cursor`` for the next."""
        params = {
            name: value
            for name, value in (
                ("status", status),
                ("player", player),
                ("league", league),
                ("cursor", cursor),
                ("limit", limit),
            )
            if value is not None
        }
        return self.decode(await self.request("GET", "/v1/games", params=params), GameList)

    # ----------------------------------------------------------------------- the audit log

    async def log_checkpoint(self, partition: int) -> Verified:
        """The partition's latest checkpoint (``GET /v1/log/{p}/checkpoint``), signed by the
        log's key and proven to extend the last one verified; then kept as the latest. Raises
        :class:`LogError` (:class:`ForkError` for two histories)."""
        response = await self.request(
            "GET", f"/v1/log/{partition}/checkpoint", headers={"Accept": "text/plain"}
        )
        return await self._trusted(self._watch().opened(partition, response.text))

    async def hand_receipt(self, game_id: str, hand: int) -> Receipt:
        """A finished hand's receipt (``GET .../hands/{n}/receipt``), checked as
        :meth:`check_receipt` checks it. An :class:`ApiError` 404 ``hand_not_found`` until the
        log holds the hand."""
        response = await self.request("GET", _game_path(game_id, "hands", str(hand), "receipt"))
        receipt = self.decode(response, Receipt)
        await self.check_receipt(receipt)
        return receipt

    async def check_receipt(self, receipt: Receipt | Mapping[str, Any]) -> Verified:
        """Check a receipt however it came (a hand record's ``receipt``, an SSE ``receipt``
        frame's data, a ``hand.scored`` webhook's): its checkpoint is signed by the log's key,
        its entry is its hand's leaf in that tree, and the tree extends the last one verified
        of the log (asked for the proof when it is newer, or older). Raises :class:`LogError`
        (:class:`ForkError` for two histories)."""
        watch = self._watch()
        shown_receipt: Mapping[str, Any] = (
            msgspec.to_builtins(receipt) if isinstance(receipt, Receipt) else receipt
        )
        try:
            partition = int(shown_receipt["partition"])
            note = str(shown_receipt["checkpoint"])
        except (KeyError, TypeError, ValueError) as error:
            raise LogError(f"the receipt is malformed: {error!r}") from None
        shown = watch.opened(partition, note)
        included(shown_receipt, shown)
        return await self._trusted(shown)

    async def _trusted(self, shown: Verified) -> Verified:
        """``shown``, once proven consistent with what the watch holds of its log."""
        watch = self._watch()
        async with self._log_lock:  # one proof at a time: each sees the last one kept
            pair = watch.to_prove(shown)
            if pair is None:
                watch.trust(shown)
                return shown
            old, new = pair
            try:
                response = await self.request(
                    "GET",
                    f"/v1/log/{shown.partition}/proofs/consistency",
                    params={"old": old.checkpoint.size, "new": new.checkpoint.size},
                )
            except ApiError as error:
                if (error.status, error.code) != (404, "not_found"):
                    raise
                raise ForkError(
                    f"{new.checkpoint.origin} cannot prove its tree of {new.checkpoint.size} "
                    f"extends its tree of {old.checkpoint.size}: {error.detail}",
                    old.note,
                    new.note,
                ) from None
            watch.proven(old, new, self.decode(response, ConsistencyProof).proof)
        return shown

    def _watch(self) -> LogWatch:
        if self.log is None:
            raise ClientError("checking the log needs its keys: SpadesClient(log=LogWatch(keys))")
        return self.log

    # ----------------------------------------------------------------------- service

    async def healthz(self) -> Health:
        """The liveness answer (the process is up)."""
        return self.decode(await self.request("GET", "/healthz"), Health)

    async def readyz(self) -> Readiness:
        """The readiness answer; raises :class:`ApiError` (503) while the stack is not ready."""
        return self.decode(await self.request("GET", "/readyz", retry=False), Readiness)

    # ----------------------------------------------------------------------- plumbing

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        retry: bool = True,
    ) -> httpx.Response:
        """One request to any path (the typed methods are built on it), with the platform key
        unless ``headers`` carry another credential; a 503 is tried again (at most ``retries``
        times) when ``retry``, a 429 always (nothing was done); an error answer raises
        :class:`ApiError`."""
        content = None if body is None else _encoder.encode(body)
        all_headers = {**_bearer(self.api_key), **(headers or {})}
        if content is not None:
            all_headers["Content-Type"] = "application/json"
        for attempt in range(1 + self.retries):
            response = await self._http.request(
                method, path, content=content, params=params, headers=all_headers
            )
            again = response.status_code == 429 or (response.status_code == 503 and retry)
            if not again or attempt == self.retries:
                break
            delay = retry_after_seconds(response.headers.get("Retry-After"))
            if delay is None:
                delay = DEFAULT_RETRY_AFTER_S
            # The server said when to come back; there is nothing to await but that time.
            await asyncio.sleep(min(MAX_RETRY_AFTER_S, delay))
        if response.is_error:
            raise ApiError.from_response(response)
        return response

    @staticmethod
    def decode(response: httpx.Response, shape: type[T]) -> T:
        """An answer's JSON as ``shape``; :class:`UnexpectedResponse` when it does not fit."""
        try:
            return msgspec.json.decode(response.content, type=shape)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            request = response.request
            raise UnexpectedResponse(
                f"{request.method} {request.url.path}: {response.status_code} answer is not "
                f"a {shape.__name__}: {error}"
            ) from None
