"""Fresh command ids (:func:`services.runtime.engine_client.new_command_id`): an engine answers
a repeated command id with the first answer, so two commands must never share one, from one
process or from two (a forked child draws its own)."""

from __future__ import annotations

import os
import re

from services.runtime.engine_client import new_command_id


def test_fresh_command_ids_are_32_hex_digits_and_never_repeat() -> None:
    ids = [new_command_id() for _ in range(10_000)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", command_id) for command_id in ids)
    assert len(set(ids)) == len(ids)


def test_a_forked_process_draws_command_ids_of_its_own() -> None:
    before = new_command_id()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child)
        os.write(write, new_command_id().encode())
        os._exit(0)
    os.close(write)
    theirs = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(child, 0)
    ours = new_command_id()
    assert theirs != ours
    assert theirs[:16] != before[:16] == ours[:16]  # another process's half, not a next count
