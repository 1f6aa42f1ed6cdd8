"""Events: a game's history as a reader may see it, by page or as server-sent events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response
from sqlalchemy.exc import SQLAlchemyError

from contracts.audit_log import Receipt
from domain.events import AnyEvent
from services.gateway.deps import GameReadOf, Services, StreamReadOf, held_by, revoked_in_memory
from services.gateway.feed import EventStream, FeedStart, finished_at, frames, resume_point
from services.gateway.models import Events
from services.gateway.openapi import OPTIONAL_CREDENTIAL, event_stream_schema, problems
from services.gateway.problems import ProblemError
from services.gateway.views import events_answer, versioned
from services.store.receipts import hand_receipt, log_kept

router = APIRouter(prefix="/v1/games/{game_id}/events", tags=["events"])


@router.get(
    "",
    response_model=Events,
    responses=problems(401, 403, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def events(
    read: GameReadOf,
    services: Services,
    after: Annotated[int, Query(ge=0, description="The version to start after.")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> Any:
    """Events after version ``after``: public ones, and with a seat token that seat's own.

    Only the commits of the page are read: the game's cached history says where in the stream
    the commit that holds version ``after + 1`` starts."""
    loaded, game_id, reader = read.loaded, read.game.game_id, read.seat
    version, through = loaded.version, loaded.sequence  # one snapshot, however the cache moves
    start = loaded.sequence_through(after)
    page: list[tuple[int, AnyEvent]] = []
    while len(page) < limit:
        commits = await services.stream.read(game_id, after=start, limit=limit, until=through)
        if not commits:
            break
        for stored in commits:
            page.extend(pair for pair in versioned(stored.commit) if pair[0] > after)
        start = commits[-1].sequence
    return events_answer(version, page[:limit], reader, read.owner)


@router.get(
    "/stream",
    response_class=EventStream,
    responses={
        200: {
            "description": "A `state` event, then every event, each with `id:` its version; "
            "a `clock` after each commit of a clocked game, with its last event's id; last, "
            "`end`, after which the server closes the stream.",
            "content": {"text/event-stream": {"schema": event_stream_schema()}},
        },
        204: {
            "description": "The game is over and `Last-Event-ID` is its last version: nothing "
            "is left to send (an `EventSource` stops reconnecting)."
        },
        **problems(401, 403, 404, 429, 503),
    },
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def event_stream(
    read: StreamReadOf,
    services: Services,
    request: Request,
    last_event_id: Annotated[
        str | None, Header(max_length=32, description="Resume after this version.")
    ] = None,
) -> Response:
    """The game as server-sent events, resumable with ``Last-Event-ID``. The stream ends, with
    an `end` event naming why, when the game is over, and a seat's when its token expires or is
    revoked by a new one. A caller holds at most its share of open streams
    (``SPADES_MAX_STREAMS``): past it, 429 ``rate_limited``."""
    game, sequence, reader = read.game, read.loaded.sequence, read.seat
    grant = read.caller.grant if reader is not None else None
    resume = resume_point(last_event_id, game.version)
    if finished_at(game, resume):
        return Response(status_code=204)
    start = FeedStart(game, sequence, resume, grant, owner=read.owner)
    kind, who = held_by(read.caller, request)
    if not services.streams.take(kind, who):
        raise ProblemError("rate_limited", services.streams.refusal(kind))

    def revoked() -> bool:
        return grant is not None and revoked_in_memory(services.games, grant)

    async def receipt_of(game_id: str, hand: int) -> Receipt | None:
        return await hand_receipt(services.store, game_id, hand)

    try:
        kept = await log_kept(services.store)  # else no receipt will come to wait for
    except SQLAlchemyError:
        kept = False  # the stream goes on without receipts; the hands' records have them

    async def body() -> AsyncIterator[bytes]:
        services.metrics.streams.inc()
        try:
            async for frame in frames(
                services.connection,
                services.stream,
                start,
                reader,
                services.keep_alive_s,
                revoked,
                receipt_of if kept else None,
                services.log_witnessed,
                services.receipt_wait_s,
            ):
                yield frame
        finally:
            services.metrics.streams.dec()

    return EventStream(body(), closed=lambda: services.streams.give_back(kind, who))
