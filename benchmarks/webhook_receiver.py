"""A real HTTP receiver of webhooks for tests and ``spades bench webhooks``: a threaded
``http.server`` on a free port of 127.0.0.1 that records every POST and answers as told.

``answer`` decides each answer from the request: a status, or :data:`HANG` (hold the request
open until :meth:`Receiver.release` or the server stops). It can be stopped and started again on
the same port (a receiver down for a while).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import msgspec

from services.runtime.nats_server import free_port

HANG = -1
"""An answer that never comes (until released)."""


@dataclass(frozen=True)
class Received:
    """One request as the receiver got it."""

    headers: dict[str, str]
    """Lower-case names."""
    body: bytes
    at: float
    """``time.time()`` when it arrived."""
    answered: int

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]

    @functools.cached_property
    def json(self) -> dict[str, Any]:
        """The body, decoded once (waiting predicates look at every request many times)."""
        decoded: dict[str, Any] = msgspec.json.decode(self.body)
        return decoded

    @property
    def type(self) -> str:
        return str(self.json["type"])


def always(status: int) -> Callable[[Received], int]:
    return lambda _request: status


ACKNOWLEDGE = always(200)


class Receiver:
    def __init__(
        self, answer: Callable[[Received], int] = ACKNOWLEDGE, port: int | None = None
    ) -> None:
        self.answer = answer
        self.port = port or free_port()
        self.received: list[Received] = []
        """Every request, in the order they arrived (answered or not)."""
        self._changed = threading.Condition()
        self._released = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # One write per answer, sent at once: no Nagle delay waiting for an ACK.
            disable_nagle_algorithm = True
            wbufsize = 64 * 1024

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                if len(body) < length:
                    # The sender went away mid-body (a webhooks process killed while sending):
                    # no receiver takes half a request as delivered, and there is no one to answer.
                    self.close_connection = True
                    return
                headers = {name.lower(): value for name, value in self.headers.items()}
                request = Received(headers, body, time.time(), 0)
                status = receiver.answer(request)
                request = dataclasses.replace(request, answered=status)
                receiver._record(request)
                if status == HANG:
                    receiver._released.wait()
                    status = 200
                reply = b"{}"
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: the tests read what was received

        self._released.clear()
        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening (a try now finds nothing there); requests held open are let go."""
        self._released.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def release(self) -> None:
        """Answer every request held open (200), and the ones to come that would hang."""
        self._released.set()

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def _record(self, request: Received) -> None:
        with self._changed:
            self.received.append(request)
            self._changed.notify_all()

    def wait_for(
        self, done: Callable[[list[Received]], bool], timeout_s: float = 30.0
    ) -> list[Received]:
        """Block until ``done(received)`` holds (every arrival is a chance); raise
        ``TimeoutError`` otherwise. Returns a copy of what was received."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not done(self.received):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.received)} received; not what was awaited")
                self._changed.wait(left)
            return list(self.received)

    def acknowledged(self) -> list[Received]:
        """What was answered with a 2xx, in order of arrival."""
        with self._changed:
            return [r for r in self.received if 200 <= r.answered < 300 or r.answered == HANG]
