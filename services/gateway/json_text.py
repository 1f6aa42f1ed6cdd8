"""Refuse a JSON body that is not UTF-8, or holds text UTF-8 cannot carry: a lone surrogate.

Every body the API takes is JSON, and JSON between systems is UTF-8 (RFC 8259, section 8.1).
Python's parser is laxer: given bytes, it guesses UTF-16 and UTF-32 from the NULs of their
ASCII, and decodes UTF-8 with ``surrogatepass``, so a surrogate's own three bytes
(``\xed\xa0\x80``) become a lone surrogate no escape spelled. A body that is not strict UTF-8,
or holds a NUL byte (JSON text never does: inside a string it is an escape, and UTF-16 and
UTF-32 put one beside every ASCII character), is answered 400 ``malformed`` first.

JSON may spell a UTF-16 surrogate as an escape (``"\\ud800"``); alone, it is no character at
all. Python's parser accepts it, and nothing downstream can encode it (the engine's messages,
the event store, the logs), so the request would fail far from its cause. Here, at the edge, a
body with one anywhere (a value, a key, however deep) is answered 400 ``malformed`` before
anything reaches NATS.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.gateway.problems import ProblemError, problem_response

_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})


def has_lone_surrogate(value: Any) -> bool:
    """Whether any string in a parsed JSON value (keys included) holds a lone surrogate."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def is_utf8_text(body: bytes) -> bool:
    """Whether a body is strict UTF-8 (surrogates' bytes refused) without a NUL byte."""
    if b"\x00" in body:
        return False
    if body.isascii():
        return True
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


_SURROGATE_ESCAPE = re.compile(rb"\\[uU][dD][89a-fA-F]")
"""``\\ud800`` to ``\\udfff``, in either case."""


def _escapes_surrogate(body: bytes) -> bool:
    """Whether the body could hold a surrogate escape at all (a cheap look before parsing:
    one scan of the bytes, on every body the gateway reads)."""
    return _SURROGATE_ESCAPE.search(body) is not None


class JsonText:
    """Pure ASGI middleware: read a request's body, refuse it for a lone surrogate, else hand
    it on unchanged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _WITH_BODY:
            await self.app(scope, receive, send)
            return
        try:
            body, last = await read_body(receive)
        except ProblemError as refused:  # the body limit, raised while reading
            await problem_response(refused.code, refused.detail)(scope, receive, send)
            return
        if not is_utf8_text(body):
            detail = "the body is not UTF-8 JSON text (RFC 8259): no UTF-16, UTF-32 or surrogates"
            await problem_response("malformed", detail)(scope, receive, send)
            return
        if _escapes_surrogate(body) and _parsed_with_lone_surrogate(body):
            detail = "the body holds a lone surrogate (\\ud800-\\udfff): not text UTF-8 can carry"
            await problem_response("malformed", detail)(scope, receive, send)
            return
        await self.app(scope, replaying(body, last, receive), send)


def replaying(body: bytes, last: Message | None, receive: Receive) -> Receive:
    """A ``receive`` that hands on a body already read: the whole of it at once, then the
    disconnect met while reading it, or whatever comes next."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return last if last is not None else await receive()

    return replay


async def read_body(receive: Receive) -> tuple[bytes, Message | None]:
    """The whole body, and a disconnect met while reading it (to hand on as it came)."""
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts), message
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts), None


def _parsed_with_lone_surrogate(body: bytes) -> bool:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return False  # not JSON: the route's own parsing refuses it as it always has
    return has_lone_surrogate(value)
