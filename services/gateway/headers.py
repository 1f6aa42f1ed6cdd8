"""A request's headers read straight from its ASGI scope.

Starlette's ``Headers`` is a mapping built for each request, and looking up a header that is
not there raises (and catches) a ``KeyError``; the middlewares and the fast path ask for one or
two headers of every request, and a loop over the scope answers the same.
"""

from __future__ import annotations

from starlette.types import Scope


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of the header ``name`` (lower case, as ASGI servers give names), as
    ``Request.headers.get`` reads it; None when the request has none."""
    for key, value in scope["headers"]:
        if key == name:
            text: str = value.decode("latin-1")
            return text
    return None
