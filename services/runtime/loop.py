"""The event loop the services run on: uvloop (libuv), where it is installed, else asyncio's.

uvloop does a service's socket reads, writes and timers in C: the per-message cost of every
NATS and HTTP exchange drops (``spades bench http`` measures it). It is a dependency on Linux
and macOS; elsewhere the services run on asyncio's own loop, unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop maker, or None for asyncio's default."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - a platform uvloop does not build on
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the services' loop."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
