"""The client's hold on the audit log (:class:`services.client.log.LogWatch`), on a log kept in
process by the service's own code: a checkpoint is trusted once signed by the log's key and,
when it is not the first, once proven to extend the last one verified; a restarted watch
checks against what the last one kept."""

from __future__ import annotations

import base64

import pytest

from services.client.log import ForkError, LogError, LogWatch, Verified, included
from tests.unit.operator_log import OperatorLog
from tests.unit.test_verify_receipts import KEY, Played


@pytest.fixture(scope="module")
def played() -> Played:
    return Played()


def proof(log: OperatorLog, old: int, new: int) -> list[str]:
    return list(log.consistency(old, new)["proof"])


def shown(watch: LogWatch, log: OperatorLog, size: int) -> Verified:
    note = log.head(size).note
    assert note is not None
    return watch.opened(0, note)


def test_a_growing_log_is_trusted_step_by_step_and_kept_across_a_restart(played: Played) -> None:
    log = played.log
    watch = LogWatch([played.key.text()])
    first = shown(watch, log, 2)
    assert watch.to_prove(first) is None  # nothing known: trusted as it is
    watch.trust(first)
    later = shown(watch, log, 5)
    assert watch.to_prove(later) == (first, later)
    watch.proven(first, later, proof(log, 2, 5))
    latest = watch.latest(0)
    assert latest is not None
    assert latest.checkpoint.size == 5
    older = shown(watch, log, 3)
    assert watch.to_prove(older) == (older, later)  # an older tree must be a prefix too
    watch.proven(older, later, proof(log, 3, 5))
    latest = watch.latest(0)
    assert latest is not None
    assert latest.checkpoint.size == 5  # the newest is kept

    restarted = LogWatch([played.key], watch.kept())
    grown = shown(restarted, log, len(log.entries))
    assert restarted.to_prove(grown) is not None


def test_another_tree_is_a_fork(played: Played) -> None:
    honest = played.log
    rewritten = OperatorLog(list(honest.entries), KEY)
    rewritten.entries[1], rewritten.entries[2] = rewritten.entries[2], rewritten.entries[1]
    watch = LogWatch([played.key], {0: honest.head(4).note or ""})
    with pytest.raises(ForkError, match="two different trees of size 4") as same:
        watch.to_prove(shown(watch, rewritten, 4))
    assert same.value.known == honest.head(4).note
    grown = shown(watch, rewritten, 6)
    old, new = watch.to_prove(grown) or (None, None)
    assert old is not None
    assert new is grown
    with pytest.raises(ForkError, match="does not extend"):
        watch.proven(old, new, proof(rewritten, 4, 6))
    latest = watch.latest(0)
    assert latest is not None
    assert latest.checkpoint.size == 4  # the fork was not trusted


def test_a_note_not_signed_by_the_log_key_is_refused(played: Played) -> None:
    other = OperatorLog(played.log.entries, type(KEY).generate("spades.test/log"))
    watch = LogWatch([played.key])
    with pytest.raises(LogError, match="does not verify"):
        shown(watch, other, 3)


def test_a_receipts_entry_must_be_its_leaf_in_its_tree(played: Played) -> None:
    watch = LogWatch([played.key])
    receipt = played.log.receipt("first", 2)
    verified = watch.opened(0, receipt["checkpoint"])
    included(receipt, verified)
    moved = {**receipt, "leaf_index": receipt["leaf_index"] - 1}
    with pytest.raises(LogError, match="is not leaf"):
        included(moved, verified)
    other = played.log.receipt("second", 1)
    with pytest.raises(LogError, match="not the receipt's hand"):
        included({**other, "hand": 2}, watch.opened(0, other["checkpoint"]))
    with pytest.raises(LogError, match="malformed"):
        included({**receipt, "entry_bytes": base64.b64encode(b"x").decode()[:-1]}, verified)
