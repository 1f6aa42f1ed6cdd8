"""The lean client of ``spades bench http``: HTTP/1.1 over asyncio streams, one keep-alive
connection per game, nothing else in the way (no bots, no HTTP library), so the client's own
cost is small and the same for the service and its bare peer.

Each game is played one action at a time by random players: the seat's view
(``GET /v1/games/{id}/view``), then one of the legal actions it lists
(``POST /v1/games/{id}/actions``). After an action, the seat its answer names is asked next,
as a client following the game would: a trick's winner leads, a new hand is bid from the
dealer's left, else the next seat round the table. When that seat's view has no legal action
(the bare peer answers with no events, say), the view's ``turn`` names the seat to ask instead
(that extra view is counted, in ``requests``). A game
that ends is replaced by a new one (its creation and seating are not timed).

With ``--lag``, a sampler reads the read models' own copy of a game just acted in
(``GET /v1/games/{id}/scoreboard?min_version=V``: answered once the read models hold version
V), every ``--lag-every`` seconds: from the action's answer to that answer is an upper bound of
the projection lag (it includes the request's own time and the server's polling step).

With ``--rate``, the games together send at most that many actions per second, evenly spaced
(the load of a quiet hour rather than the most the server takes).

Run as ``python -m benchmarks.http_client URL --games 16 --warmup 3 --seconds 20``. It prints
``window-start`` and ``window-end`` when the measured window opens and closes (so the caller
can sample the servers' CPU then), then one JSON line of :class:`ClientFigures`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import msgspec

_json = msgspec.json.Decoder()
_encode = msgspec.json.encode
SEATS = 4


class ClientFigures(msgspec.Struct):
    seconds: float
    actions: int
    requests: int
    errors: int
    error_samples: list[str]
    latencies_ms: list[float]
    """Every request of the action path in the window (views and actions)."""
    action_latencies_ms: list[float]
    lags_ms: list[float]
    games_finished: int


class HttpError(Exception):
    pass


class Connection:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, host: str, port: int) -> None:
        self._host = host
        self._port = port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def request(
        self, method: str, path: str, token: str | None = None, body: bytes | None = None
    ) -> tuple[int, bytes]:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
        assert self._reader is not None
        head = f"{method} {path} HTTP/1.1\r\nHost: {self._host}\r\n"
        if token is not None:
            head += f"Authorization: Bearer {token}\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self._writer.write(head.encode() + b"\r\n" + (body or b""))
        try:
            raw = await self._reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError) as error:
            await self.close()
            raise HttpError(f"connection lost: {error!r}") from None
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length = 0
        close = False
        for line in lines[1:]:
            name, _, value = line.partition(":")
            lowered = name.lower()
            if lowered == "content-length":
                length = int(value)
            elif lowered == "transfer-encoding":
                raise HttpError("a chunked answer: the lean client reads Content-Length only")
            elif lowered == "connection" and value.strip().lower() == "close":
                close = True
        data = await self._reader.readexactly(length) if length else b""
        if close:
            await self.close()
        return status, data

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


@dataclass
class Tally:
    window_start: float = 0.0
    window_end: float = float("inf")
    actions: int = 0
    requests: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    action_latencies: list[float] = field(default_factory=list)
    lags: list[float] = field(default_factory=list)
    finished: int = 0
    last_action: tuple[str, bytes, float] | None = None
    """The last action answered: its game, its answer and when."""

    def timed(self, started: float, ended: float, action: bool) -> None:
        if self.window_start <= started and ended <= self.window_end:
            self.requests += 1
            self.latencies.append((ended - started) * 1000)
            if action:
                self.actions += 1
                self.action_latencies.append((ended - started) * 1000)

    def error(self, what: str) -> None:
        if time.perf_counter() >= self.window_start:
            self.errors += 1
            if len(self.error_samples) < 5:
                self.error_samples.append(what[:300])


class Pacer:
    """Spaces the actions of every game ``1 / rate`` seconds apart (no spacing without a
    rate)."""

    def __init__(self, rate: float | None) -> None:
        self._step = 1 / rate if rate else 0.0
        self._next = 0.0

    async def turn(self) -> None:
        if not self._step:
            return
        now = time.perf_counter()
        at = max(self._next, now)
        self._next = at + self._step
        await asyncio.sleep(at - now)  # the pace itself: there is nothing else to wait for


async def _expect(connection: Connection, method: str, path: str, **kw: Any) -> Any:
    status, data = await connection.request(method, path, **kw)
    if status >= 300:
        raise HttpError(f"{method} {path}: {status} {data[:200]!r}")
    return _json.decode(data)


async def _new_game(
    connection: Connection, preset: str, rng: random.Random
) -> tuple[str, list[str]]:
    rules = {"preset": preset}
    game = await _expect(connection, "POST", "/v1/games", body=_encode({"rules": rules}))
    game_id: str = game["game_id"]
    tokens = []
    for seat in range(SEATS):
        body = _encode({"player": f"p{seat}-{rng.randrange(10**9)}", "seat": seat})
        taken = await _expect(connection, "POST", f"/v1/games/{game_id}/seats", body=body)
        tokens.append(taken["token"])
    return game_id, tokens


async def _play(
    connection: Connection,
    preset: str,
    rng: random.Random,
    tally: Tally,
    stop: asyncio.Event,
    pacer: Pacer,
) -> None:
    while not stop.is_set():
        try:
            game_id, tokens = await _new_game(connection, preset, rng)
        except (HttpError, OSError) as error:
            tally.error(str(error))
            await asyncio.sleep(0.05)  # a refused setup: try again after a beat
            continue
        seat = 0
        view_path = f"/v1/games/{game_id}/view"
        act_path = f"/v1/games/{game_id}/actions"
        while not stop.is_set():
            try:
                started = time.perf_counter()
                status, data = await connection.request("GET", view_path, token=tokens[seat])
                ended = time.perf_counter()
                if status != 200:
                    tally.error(f"view {status} {data[:200]!r}")
                    break
                tally.timed(started, ended, action=False)
                view = _json.decode(data)
                if view["status"] == "finished":
                    tally.finished += 1
                    break
                legal = view["legal"]
                if not legal:
                    turn = view.get("turn")
                    seat = turn if isinstance(turn, int) else (seat + 1) % SEATS
                    continue
                action = _chosen(rng.choice(legal), view, rng)
                body = _encode(action)
                await pacer.turn()
                started = time.perf_counter()
                status, data = await connection.request("POST", act_path, tokens[seat], body)
                ended = time.perf_counter()
                if status != 200:
                    tally.error(f"action {status} {data[:200]!r}")
                    continue
                tally.timed(started, ended, action=True)
                tally.last_action = (game_id, data, ended)
                seat = _next_seat(seat, _json.decode(data))
            except (HttpError, OSError) as error:
                tally.error(str(error))
                break


def _next_seat(seat: int, answer: Any) -> int:
    """The seat that acts next, as the action's answer tells it: a trick's winner leads, a new
    hand is bid from the dealer's left; else the next seat round the table (an answer that
    says neither, the bare peer's, means the next seat too)."""
    events = answer.get("events") if isinstance(answer, dict) else None
    for record in reversed(events or []):
        event = record.get("event") if isinstance(record, dict) else None
        if not isinstance(event, dict):
            continue
        kind, dealer, winner = event.get("type"), event.get("dealer"), event.get("seat")
        if kind == "hand_dealt" and isinstance(dealer, int):
            return (dealer + 1) % SEATS
        if kind == "trick_won" and isinstance(winner, int):
            return winner
    return (seat + 1) % SEATS


def _chosen(legal: dict[str, Any], view: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A legal action as sent: a pass or a discard of ``count`` cards names that many of the
    seat's cards."""
    action = dict(legal)
    count = action.pop("count", None)
    if count is not None:
        action["cards"] = rng.sample(view["hand"] or [], count)
    action["expected_version"] = view["version"]
    return action


async def _sample_lag(
    connection: Connection, tally: Tally, every_s: float, stop: asyncio.Event
) -> None:
    while not stop.is_set():
        await asyncio.sleep(every_s)  # a sampling period: there is nothing to await
        if tally.last_action is None:
            continue
        game_id, answer, answered = tally.last_action
        version = _json.decode(answer)["version"]
        path = f"/v1/games/{game_id}/scoreboard?min_version={version}"
        try:
            status, data = await connection.request("GET", path)
        except (HttpError, OSError) as error:
            tally.error(f"lag sample: {error}")
            continue
        seen = time.perf_counter()
        if status != 200:
            tally.error(f"lag sample {status} {data[:200]!r}")
        elif answered >= tally.window_start and seen <= tally.window_end:
            tally.lags.append((seen - answered) * 1000)


async def drive(
    url: str,
    games: int,
    warmup_s: float,
    seconds: float,
    preset: str,
    seed: int,
    lag_every_s: float | None,
    rate: float | None = None,
) -> ClientFigures:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    tally = Tally()
    stop = asyncio.Event()
    rng = random.Random(seed)
    pacer = Pacer(rate)
    tasks = [
        asyncio.create_task(
            _play(Connection(host, port), preset, random.Random(rng.random()), tally, stop, pacer)
        )
        for _ in range(games)
    ]
    if lag_every_s is not None:
        tasks.append(
            asyncio.create_task(_sample_lag(Connection(host, port), tally, lag_every_s, stop))
        )
    tally.window_start = time.perf_counter() + warmup_s
    await asyncio.sleep(warmup_s)
    print("window-start", flush=True)
    await asyncio.sleep(seconds)
    tally.window_end = time.perf_counter()
    print("window-end", flush=True)
    stop.set()
    await asyncio.gather(*tasks)
    return ClientFigures(
        seconds=round(tally.window_end - tally.window_start, 3),
        actions=tally.actions,
        requests=tally.requests,
        errors=tally.errors,
        error_samples=tally.error_samples,
        latencies_ms=[round(x, 3) for x in tally.latencies],
        action_latencies_ms=[round(x, 3) for x in tally.action_latencies],
        lags_ms=[round(x, 3) for x in tally.lags],
        games_finished=tally.finished,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="The lean client of `spades bench http`.")
    parser.add_argument("url")
    parser.add_argument("--games", type=int, default=16)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--preset", default="partnership")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lag-every", type=float, default=None)
    parser.add_argument("--rate", type=float, default=None, help="actions per second, at most")
    options = parser.parse_args()
    figures = asyncio.run(
        drive(
            options.url,
            options.games,
            options.warmup,
            options.seconds,
            options.preset,
            options.seed,
            options.lag_every,
            options.rate,
        )
    )
    sys.stdout.write(msgspec.json.encode(figures).decode() + "\n")


if __name__ == "__main__":
    main()
