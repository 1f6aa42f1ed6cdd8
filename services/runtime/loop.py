"""The event loop the services run on: uvloop (libuv), where it is installed, else asyncio's.

uvloop does a service's socket reads, writes and timers in C: the per-message cost of every
NATS and HTTP exchange drops (``spades bench http`` measures it). It is a dependency on Linux
and macOS; elsewhere the services run on asyncio's own loop, unchanged.
"""

from __future__ import annotations

import asyncio
import gc
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


def freeze_started_heap() -> None:
    """Take what a started service holds (modules, its libraries' objects, its connections)
    out of the garbage collector's sight, once per process.

    None of it is ever garbage, yet each full collection walked all of it with the loop stopped:
    in ``spades bench http`` the gateway's took up to 100 ms and the engine's and the workers'
    up to 130 to 180 ms, every request and message waiting meanwhile. Frozen, a full
    collection walks only what the service made since. A service calls this once it is ready;
    later calls in the same process (several services run as tasks of one, or tests) freeze
    nothing more, so the garbage of one service's run is never frozen for good by the next.
    """
    if gc.get_freeze_count() == 0:
        gc.freeze()


async def until_stopped(work: Coroutine[Any, Any, None]) -> None:
    """Run a service's ``work`` until it ends or SIGTERM or Ctrl-C comes, then cancel it and
    wait for it to unwind. Work that ended on its own with an error raises it here."""
    import contextlib
    import signal

    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    worker = asyncio.create_task(work)
    stop = asyncio.create_task(stopping.wait())
    await asyncio.wait({worker, stop}, return_when=asyncio.FIRST_COMPLETED)
    stop.cancel()
    if worker.done():
        worker.result()
        return
    worker.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await worker
