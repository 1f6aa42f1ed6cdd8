"""The ``/v1/leagues`` endpoints as typed async calls, over a :class:`SpadesClient`.

A wrapper rather than methods of the client for now: it sends through the client's own request
plumbing, so problems become :class:`~services.client.api.ApiError` and 503s are retried
exactly as for games, with the client's platform key. Its answers are the structs the server
encodes them from (:mod:`contracts.leagues`).

>>> async def one_round() -> None:  # doctest: +SKIP
...     async with SpadesClient("http://127.0.0.1:8000") as client:
...         leagues = LeagueClient(client)
...         league = await leagues.create_league("north", {"preset": "solo"}, list("abcdefgh"))
...         started = await leagues.start_round(league.league_id, idempotency_key="round-1")
...         tokens = {table.game_id: table.seats for table in started.tables}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any, Literal

from contracts.leagues import (
    Adjustment,
    IntegrityReport,
    League,
    LeagueBoards,
    LeagueRound,
    RoundStarted,
    Standings,
    Substituted,
    VoidedTable,
    Withdrawn,
)
from services.audit.boards import (
    BoardFinding,
    DuplicateEvent,
    EventRound,
    TableHand,
    audit_boards,
    hands_of_records,
)
from services.client.api import ApiError, SpadesClient, keyed

Export = Literal["standings", "results"]


def _path(league_id: str, *rest: str) -> str:
    return "/".join(("/v1/leagues", league_id, *rest))


class LeagueClient:
    """League calls through ``client`` (which holds the platform key they need)."""

    def __init__(self, client: SpadesClient) -> None:
        self.client = client

    async def create_league(
        self,
        name: str,
        rules: Mapping[str, Any],
        players: Sequence[str],
        rounds: int | None = None,
        pairing: str = "auto",
        idempotency_key: str | None = None,
        visibility: str | None = None,
        clock: Mapping[str, Any] | None = None,
        knockout: Mapping[str, Any] | None = None,
        league_format: Literal["standard", "duplicate"] | None = None,
        boards_per_round: int | None = None,
        partners: Literal["fixed", "rotating"] | None = None,
        convention: Literal["as_scored", "transferred"] | None = None,
    ) -> League:
        """Create a league. With ``idempotency_key`` a 503 is retried, and every retry gets the
        same league. ``visibility`` (of the league and its games) left out takes the server's
        default (`private` when it has platform keys); ``clock`` is every table's clock;
        ``knockout`` (``{"top"?, "deals" | "target", "ratings"?}``) the knockout it ends with,
        after ``rounds`` rounds. ``league_format`` (the body's ``format``) ``duplicate`` makes
        a duplicate event of ``boards_per_round`` boards a round, its ``partners`` fixed or
        rotating, its sets and bags counted by ``convention``."""
        body: dict[str, Any] = {"name": name, "rules": dict(rules), "players": list(players)}
        body["pairing"] = pairing
        if rounds is not None:
            body["rounds"] = rounds
        if visibility is not None:
            body["visibility"] = visibility
        if clock is not None:
            body["clock"] = dict(clock)
        if knockout is not None:
            body["knockout"] = dict(knockout)
        if league_format is not None:
            body["format"] = league_format
        if boards_per_round is not None:
            body["boards_per_round"] = boards_per_round
        if partners is not None:
            body["partners"] = partners
        if convention is not None:
            body["convention"] = convention
        response = await self.client.request(
            "POST",
            "/v1/leagues",
            body=body,
            headers=keyed(self._platform(), idempotency_key),
            retry=idempotency_key is not None,
        )
        return self.client.decode(response, League)

    async def league(self, league_id: str) -> League:
        return self.client.decode(await self.client.request("GET", _path(league_id)), League)

    async def start_round(
        self, league_id: str, round_number: int | None = None, idempotency_key: str | None = None
    ) -> RoundStarted:
        """Schedule the next round and start its games. With ``idempotency_key`` a 503 is
        retried with the same key, which finishes starting the same round."""
        headers = keyed(self._platform(), idempotency_key)
        body = {"round": round_number} if round_number is not None else None
        response = await self.client.request(
            "POST",
            _path(league_id, "rounds"),
            body=body,
            headers=headers,
            retry=idempotency_key is not None,
        )
        return self.client.decode(response, RoundStarted)

    async def board_audit(self, league_id: str) -> list[BoardFinding]:
        """The audit of a duplicate league's boards (:mod:`services.audit.boards`), from what
        the API shows: the league's published and revealed boards, its rounds, and each
        table's hand records (a table whose game cannot be read has no deals to check)."""
        league = await self.league(league_id)
        if league.format != "duplicate" or league.boards is None:
            raise ValueError(f"league {league_id} is not a duplicate event")
        rounds = []
        tables: dict[str, list[TableHand]] = {}
        for number in range(1, league.rounds_scheduled + 1):
            played = await self.round(league_id, number)
            if not played.boards:
                continue  # a knockout's round after the event: its games are dealt afresh
            games = tuple(table.game_id for table in played.tables)
            rounds.append(
                EventRound(
                    number=number, games=games, boards=tuple(played.boards), over=played.finished
                )
            )
            for game_id in games:
                try:
                    records = await self.client.hands(game_id)
                except ApiError as error:
                    if error.status != HTTPStatus.NOT_FOUND:
                        raise
                    continue
                tables[game_id] = hands_of_records(records, league.rules)
        event = DuplicateEvent(
            league_id=league_id,
            rules=league.rules,
            root=league.boards.root,
            commitments=tuple(league.boards.commitments),
            rounds=tuple(rounds),
            revealed={shown.board: shown.seed for shown in league.revealed},
        )
        return audit_boards(event, tables)

    async def round(self, league_id: str, number: int) -> LeagueRound:
        response = await self.client.request("GET", _path(league_id, "rounds", str(number)))
        return self.client.decode(response, LeagueRound)

    async def standings(self, league_id: str, min_version: int | None = None) -> Standings:
        """The standings; ``min_version`` waits (briefly) until they count that many games."""
        params = {"min_version": min_version} if min_version is not None else None
        response = await self.client.request("GET", _path(league_id, "standings"), params=params)
        return self.client.decode(response, Standings)

    async def integrity(self, league_id: str) -> IntegrityReport:
        """The collusion signals of every pair of the league's players (its platform only)."""
        response = await self.client.request("GET", _path(league_id, "integrity"))
        return self.client.decode(response, IntegrityReport)

    async def withdraw(
        self, league_id: str, player: str, idempotency_key: str | None = None
    ) -> Withdrawn:
        """Withdraw ``player``: later rounds skip them."""
        response = await self.client.request(
            "POST",
            _path(league_id, "withdrawals"),
            body={"player": player},
            headers=keyed(self._platform(), idempotency_key),
            retry=idempotency_key is not None,
        )
        return self.client.decode(response, Withdrawn)

    async def substitute(
        self, league_id: str, player: str, substitute: str, idempotency_key: str | None = None
    ) -> Substituted:
        """Seat ``substitute`` in ``player``'s running seat; the answer holds the new token."""
        response = await self.client.request(
            "POST",
            _path(league_id, "substitutions"),
            body={"player": player, "substitute": substitute},
            headers=keyed(self._platform(), idempotency_key),
            retry=idempotency_key is not None,
        )
        return self.client.decode(response, Substituted)

    async def boards(self, league_id: str, min_version: int | None = None) -> LeagueBoards:
        """A duplicate league's cross-table: its finished boards across every table."""
        params = {} if min_version is None else {"min_version": min_version}
        response = await self.client.request("GET", _path(league_id, "boards"), params=params)
        return self.client.decode(response, LeagueBoards)

    async def adjust_score(
        self,
        league_id: str,
        player: str,
        points: int,
        reason: str,
        round_number: int | None = None,
        idempotency_key: str | None = None,
    ) -> Adjustment:
        """The director's adjusted score: ``points`` added to ``player``'s total, for
        ``reason`` (``round_number``: the round it concerns, if one)."""
        body: dict[str, object] = {"player": player, "points": points, "reason": reason}
        if round_number is not None:
            body["round"] = round_number
        response = await self.client.request(
            "POST",
            _path(league_id, "adjustments"),
            body=body,
            headers=keyed(self._platform(), idempotency_key),
            retry=idempotency_key is not None,
        )
        return self.client.decode(response, Adjustment)

    async def void_table(
        self,
        league_id: str,
        game_id: str,
        reason: str,
        idempotency_key: str | None = None,
        board: int | None = None,
    ) -> VoidedTable:
        """The director voids the finished table ``game_id``: it counts for no one (or, with
        ``board``, that one board of a duplicate event's table)."""
        body: dict[str, object] = {"game_id": game_id, "reason": reason}
        if board is not None:
            body["board"] = board
        response = await self.client.request(
            "POST",
            _path(league_id, "voids"),
            body=body,
            headers=keyed(self._platform(), idempotency_key),
            retry=idempotency_key is not None,
        )
        return self.client.decode(response, VoidedTable)

    async def export(self, league_id: str, what: Export, export_format: str = "json") -> bytes:
        """The league's ``standings`` or ``results`` export, as the server wrote it (JSON or
        CSV)."""
        response = await self.client.request(
            "GET",
            _path(league_id, "exports", what),
            params={"format": export_format},
            headers=self._platform(),
        )
        return response.content

    def _platform(self) -> dict[str, str]:
        key = self.client.api_key
        return {"Authorization": f"Bearer {key}"} if key else {}
