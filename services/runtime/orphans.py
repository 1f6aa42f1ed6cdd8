"""Children that do not outlive their parent.

A process started with :func:`dies_with_parent` as its ``preexec_fn`` is sent SIGTERM by the
kernel when the thread that started it ends, however it ends (``kill -9`` included), through
``prctl(PR_SET_PDEATHSIG)``. Linux only; elsewhere the parent's own cleanup is all there is.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def dies_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that ties the child to this process (None where it cannot)."""
    if sys.platform != "linux":
        return None
    parent = os.getpid()

    def in_child() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died between fork and here
            os._exit(1)

    return in_child
