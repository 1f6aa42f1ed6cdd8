"""Sending commands to the engines: one NATS request per command, answered by one engine.
Games' commands and leagues' go the same way, on their own subjects, their replies to one inbox
subscription of the connection (:mod:`services.runtime.replies`).

A game's command goes to the engine that serves the game's partition (:mod:`.claims`); when none
does this instant (it has just ended, its lease has not run out), to any engine
(:data:`~contracts.partitions.ANY_ENGINE_SUBJECTS`), whose append is as safe: every append is
optimistic. A timer's timeout goes the same way on subjects of its own
(:meth:`~contracts.partitions.Partitions.timeout_subject`), the only ones the timers may send
to."""

from __future__ import annotations

import itertools
import os
import secrets
from typing import TypeVar

import msgspec
import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg

from contracts.partitions import ONE, Partitions
from contracts.wire import (
    CommandReply,
    CommandRequest,
    LeagueCommandReply,
    LeagueCommandRequest,
    LeagueRequestBody,
    RequestBody,
    TimeOutRequest,
    league_command_subject,
    league_reply_decoder,
    reply_decoder,
)
from services.runtime.replies import Replies

_encoder = msgspec.json.Encoder()

R = TypeVar("R")


class EngineUnavailable(Exception):
    """No engine answered in time (or none is running). Retry with the same command id."""


class _CommandIds:
    """Fresh command ids: 32 hex digits, a random half drawn once per process (again in a
    forked child) and a counter. Unique as ``secrets.token_hex(16)`` was for every process
    that could append to a game's history, without a system call for random bytes per
    command."""

    def __init__(self) -> None:
        self._draw()
        os.register_at_fork(after_in_child=self._draw)

    def _draw(self) -> None:
        self._process = secrets.token_hex(8)
        self._count = itertools.count()

    def next(self) -> str:
        return f"{self._process}{next(self._count):016x}"


new_command_id = _CommandIds().next


class EngineClient:
    """Sends command requests over a NATS connection."""

    def __init__(
        self, connection: Client, timeout_s: float = 5.0, partitions: Partitions = ONE
    ) -> None:
        self._replies = Replies(connection)
        self._timeout_s = timeout_s
        self._partitions = partitions

    async def send(
        self, game_id: str, body: RequestBody, command_id: str | None = None
    ) -> CommandReply:
        """Send one command; the same ``command_id`` always gets the first answer."""
        request = CommandRequest(
            command_id=command_id or new_command_id(), game_id=game_id, body=body
        )
        if isinstance(body, TimeOutRequest):
            subject = self._partitions.timeout_subject(game_id)
            fallback = Partitions.any_engine_timeout_subject(game_id)
        else:
            subject = self._partitions.command_subject(game_id)
            fallback = Partitions.any_engine_subject(game_id)
        try:
            return await self._ask(subject, request, reply_decoder)
        except EngineUnavailable as error:
            if not isinstance(error.__cause__, nats.errors.NoRespondersError):
                raise
        return await self._ask(fallback, request, reply_decoder)

    async def send_league(
        self, league_id: str, body: LeagueRequestBody, command_id: str | None = None
    ) -> LeagueCommandReply:
        """Send one league command; the same ``command_id`` always gets the first answer."""
        request = LeagueCommandRequest(
            command_id=command_id or new_command_id(), league_id=league_id, body=body
        )
        return await self._ask(league_command_subject(league_id), request, league_reply_decoder)

    async def _ask(self, subject: str, request: object, decoder: msgspec.json.Decoder[R]) -> R:
        """One request to whichever engine of the queue group answers it."""
        try:
            message = await self._request(subject, _encoder.encode(request))
        except nats.errors.NoRespondersError as error:
            raise EngineUnavailable(str(error) or type(error).__name__) from error
        return decoder.decode(message.data)

    async def _request(self, subject: str, data: bytes) -> Msg:
        """A request's answer; a timeout is :class:`EngineUnavailable`, no responders raised
        as it is (the caller may ask elsewhere)."""
        try:
            return await self._replies.request(subject, data, timeout_s=self._timeout_s)
        except nats.errors.TimeoutError as error:
            raise EngineUnavailable(str(error) or type(error).__name__) from None
