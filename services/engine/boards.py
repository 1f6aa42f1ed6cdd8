"""The seeds of a duplicate event's boards, derived, never stored.

Board ``k`` of league ``L`` is dealt from ``HMAC-SHA256(boards_key, "L:k")``, where
``boards_key = HMAC-SHA256(key, "spades duplicate boards v1")`` and ``key`` is the stack's secret
key (``SPADES_SECRET_KEY``, else the key file every process of the stack reads:
:meth:`services.runtime.settings.Settings.signing_key`). The key is not used directly: the
seeds are published once revealed, and nothing signed with the stack's key (a seat token) may
ever be an HMAC anyone has seen. So every engine of a stack derives the
same seed for a board, the event's commitments can be published when it is created, and no seed
exists anywhere (in a stream, a cache, a log) before the league engine reveals it with the end
of the board's round (:class:`domain.league.BoardsRevealed`). Changing the key while an event is
being played makes its boards differ from their commitments: the league engine then refuses to
reveal (``invalid_rules``) and the audit (``spades league audit``) names every table's deal.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from functools import partial

from domain.boards import BoardSeeds

PURPOSE = b"spades duplicate boards v1"


def boards_key(key: bytes) -> bytes:
    """The key the boards are derived from: the stack's key, for this purpose alone."""
    return hmac.new(key, PURPOSE, hashlib.sha256).digest()


def board_seed(key: bytes, league_id: str, board: int) -> bytes:
    """The seed of board ``board`` of league ``league_id``, from the stack's ``key``."""
    return hmac.new(boards_key(key), f"{league_id}:{board}".encode(), hashlib.sha256).digest()


def board_seeds(key: bytes, league_id: str, boards: Iterable[int]) -> dict[int, bytes]:
    """The seeds of ``boards``, by number."""
    return {board: board_seed(key, league_id, board) for board in boards}


def board_source(key: bytes, league_id: str) -> BoardSeeds:
    """How a table of league ``league_id`` is dealt: each board from its own seed, derived when
    the board is dealt."""
    return BoardSeeds(b"", partial(board_seed, key, league_id))
