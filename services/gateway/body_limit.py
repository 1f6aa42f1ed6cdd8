"""Refuse request bodies over a limit, whether their length is announced or not."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.gateway.headers import header
from services.gateway.problems import ProblemError, problem_response

MAX_BODY_BYTES = 64 * 1024
"""No request of the API comes near this; the engine refuses commands above it too."""


class BodyLimit:
    """Pure ASGI middleware: a body over ``max_bytes`` is answered ``malformed``.

    An announced ``Content-Length`` over the limit is refused before anything is read; a body
    that grows past it while the route reads it stops the read with a ProblemError.
    """

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        announced = header(scope, b"content-length") or ""
        if announced.isdigit() and int(announced) > self.max_bytes:
            await problem_response("malformed", self._detail)(scope, receive, send)
            return
        received = 0

        async def receive_within_limit() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise ProblemError("malformed", self._detail)
            return message

        await self.app(scope, receive_within_limit, send)

    @property
    def _detail(self) -> str:
        return f"a request body is at most {self.max_bytes} bytes"
