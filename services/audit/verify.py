"""Checking what players and platforms kept of the audit log, offline, with nothing of ours but the
log's public keys (``spades verify``).

A folder holds what was kept: hand records with their ``receipt`` (``GET .../hands/{n}``), bare
receipts (``GET .../hands/{n}/receipt``) and consistency proofs (``GET
/v1/log/{p}/proofs/consistency``). Each receipt is checked alone: its checkpoint is a note
signed by a given key, for the receipt's origin and size; its entry is the leaf at its index in
that tree (RFC 6962 inclusion) and says what the receipt says; its deal's commitment is the one
signed before the first bid and the revealed seed opens it (a duplicate event's hand, scored
without its seed: the board's seed its league revealed, from a league's answer kept in the
folder, opens it under the event's published root and deals the record's cards); with witnesses'
keys given (``--witness``), it carries a valid cosignature of each (C2SP ``tlog-cosignature``:
the witness saw that tree, and cosigns no other history of the log). A hand record is checked
against its entry and replayed under its rules
(:func:`~services.audit.hand_record.audit_hand_records`). Then the receipts of one log are
checked together: two trees of one size with different heads are a fork; trees of different
sizes must be proven consistent by a proof in the folder (else the pair is reported unproven,
with the request that fetches the proof); one hand shown at two places or with two entries is
history rewritten.

Everything here is pure: :func:`read_kept` turns parsed JSON documents into what was kept,
:func:`verify_kept` returns the findings. Each finding names the file, the game and hand, and
what disagrees; a warning (an unproven pair, a record not yet in the log) is no failure.
"""

from __future__ import annotations

import base64
import binascii
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec.structs import replace

from contracts.log_entries import HandEnd, read_entry
from domain.boards import BoardMismatch, board_proof, check_seed, check_table_deal
from domain.records import HandRecord
from domain.rules import resolve_rules
from domain.shuffle import commitment
from services.audit.boards import hands_of_records
from services.audit.deals import COMMITMENT_RULE, seed_bytes
from services.audit.hand_record import audit_hand_records
from services.audit.record_file import UnreadableRecord
from services.transparency.checkpoint import Checkpoint
from services.transparency.merkle import ProofError, leaf_hash, verify_consistency, verify_inclusion
from services.transparency.note import SIGNATURE_MARK, NoteError, Verifier, open_note

HAND_RECORD_FIELDS = frozenset(known.encode_name for known in msgspec.structs.fields(HandRecord))
"""A hand record's own fields (what a kept record holds besides: its receipt, rules, ...)."""
RECORD_FIELDS = ("bids", "points", "scores", "bags")
"""What a hand record and its log entry both say, under the same names (tricks are the
record's ``tricks_won``; the seed and commitment are its ``deal``'s)."""


@dataclass(frozen=True)
class Finding:
    """One thing that does not hold (or, as a warning, that the folder cannot show)."""

    file: str
    game_id: str | None
    hand: int | None
    check: str
    """``unreadable``, ``signature``, ``inclusion``, ``entry``, ``deal``, ``record``,
    ``replay``, ``rewritten``, ``fork``, ``consistency``, ``unproven``, ``unlogged`` or
    ``witness``."""
    detail: str
    warning: bool = False
    command: str | None = None
    """For an unproven pair: the request that fetches the missing proof."""

    def as_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "game_id": self.game_id,
            "hand": self.hand,
            "check": self.check,
            "detail": self.detail,
            "warning": self.warning,
            "command": self.command,
        }

    def told(self) -> str:
        where = self.file
        if self.game_id is not None:
            where += f": game {self.game_id}"
            if self.hand is not None:
                where += f" hand {self.hand}"
        kind = "warning" if self.warning else "caught"
        line = f"{kind} [{self.check}] {where}: {self.detail}"
        return line if self.command is None else f"{line}\n    fetch it: {self.command}"


@dataclass(frozen=True)
class KeptReceipt:
    file: str
    receipt: Mapping[str, Any]
    record: Mapping[str, Any] | None = None
    """The hand record it came with, if it came in one."""


@dataclass(frozen=True)
class KeptProof:
    file: str
    proof: Mapping[str, Any]


@dataclass(frozen=True)
class KeptBoards:
    """A duplicate event's boards as its league's answer (``GET /v1/leagues/{id}``) published
    them: the Merkle root over every board's commitment, and the seeds revealed so far. A
    duplicate hand is scored without its seed (every table of the round holds the board); its
    league reveals it once every table has played it."""

    file: str
    league_id: str
    rules: Mapping[str, Any]
    root: str
    commitments: tuple[str, ...]
    revealed: Mapping[int, str]

    def board_of(self, promised: str) -> int | None:
        """The board whose commitment ``promised`` is, if it is one of these."""
        return self.commitments.index(promised) + 1 if promised in self.commitments else None


@dataclass
class Kept:
    """What a folder holds, sorted by kind; ``findings`` are documents it could not take."""

    boards: list[KeptBoards] = field(default_factory=list)
    """Duplicate events' leagues, whose boards open their hands' deals."""
    receipts: list[KeptReceipt] = field(default_factory=list)
    records: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    """Hand records without a receipt: kept before the log held the hand, or exported alone."""
    proofs: list[KeptProof] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def read_kept(documents: Iterable[tuple[str, Any]]) -> Kept:
    """Sort parsed JSON documents (each named by its file) into receipts, records, proofs and
    duplicate leagues' answers. A file may hold one document, a list of them, or ``{"hands":
    [...]}`` (a game's records)."""
    kept = Kept()
    for name, document in documents:
        if isinstance(document, Mapping) and isinstance(document.get("hands"), list):
            document = document["hands"]
        for item in document if isinstance(document, list) else [document]:
            _sort(kept, name, item)
    return kept


def _sort(kept: Kept, name: str, item: Any) -> None:
    if isinstance(item, Mapping) and item.get("type") == "hand.scored":
        _webhook(kept, name, item.get("data"))
    elif isinstance(item, Mapping) and {"entry_bytes", "checkpoint"} <= item.keys():
        kept.receipts.append(KeptReceipt(name, item))
    elif isinstance(item, Mapping) and "deal" in item:
        if isinstance(item.get("receipt"), Mapping):
            kept.receipts.append(KeptReceipt(name, item["receipt"], item))
        else:
            hand = item.get("hand")
            detail = (
                "a hand record without its receipt (kept before the log held the hand, or "
                "exported alone): replayed, but checked against no log"
            )
            kept.records.append((name, item))
            kept.findings.append(
                Finding(
                    name, None, hand if isinstance(hand, int) else None, "unlogged", detail, True
                )
            )
    elif isinstance(item, Mapping) and {"old", "new", "old_root", "new_root"} <= item.keys():
        kept.proofs.append(KeptProof(name, item))
    elif (
        isinstance(item, Mapping)
        and "league_id" in item
        and isinstance(item.get("boards"), Mapping)
    ):
        _league(kept, name, item)
    else:
        detail = "neither a hand record, a receipt, a consistency proof nor a duplicate league"
        kept.findings.append(Finding(name, None, None, "unreadable", detail))


def _league(kept: Kept, name: str, league: Mapping[str, Any]) -> None:
    """A duplicate league's answer: its published boards and the seeds revealed so far."""
    boards = league["boards"]
    try:
        kept.boards.append(
            KeptBoards(
                file=name,
                league_id=str(league["league_id"]),
                rules=dict(league["rules"]),
                root=str(boards["root"]),
                commitments=tuple(str(promised) for promised in boards["commitments"]),
                revealed={int(shown["board"]): str(shown["seed"]) for shown in league["revealed"]},
            )
        )
    except (KeyError, TypeError, ValueError) as error:
        detail = f"a league's answer without its boards and revealed seeds: {error!r}"
        kept.findings.append(Finding(name, None, None, "unreadable", detail))


def _webhook(kept: Kept, name: str, data: Any) -> None:
    """A ``hand.scored`` webhook as a platform received it: its receipt, when the log had one."""
    receipt = data.get("receipt") if isinstance(data, Mapping) else None
    if isinstance(receipt, Mapping):
        kept.receipts.append(KeptReceipt(name, receipt))
        return
    game_id = data.get("game_id") if isinstance(data, Mapping) else None
    hand = data.get("hand") if isinstance(data, Mapping) else None
    kept.findings.append(
        Finding(
            name,
            game_id if isinstance(game_id, str) else None,
            hand if isinstance(hand, int) else None,
            "unlogged",
            "a hand.scored webhook sent without a receipt: nothing of the log to check",
            warning=True,
        )
    )


@dataclass(frozen=True)
class Head:
    """A checkpoint a receipt carried, once its signature and inclusion proof hold."""

    origin: str
    partition: int
    size: int
    root: bytes
    file: str
    game_id: str
    hand: int

    def named(self) -> str:
        return f"{self.file} (game {self.game_id} hand {self.hand})"


@dataclass
class Verified:
    findings: list[Finding]
    receipts: int
    records: int
    proofs: int

    @property
    def ok(self) -> bool:
        return not any(not finding.warning for finding in self.findings)

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "receipts": self.receipts,
            "records": self.records,
            "proofs": self.proofs,
            "findings": [finding.as_json() for finding in self.findings],
        }


def verify_kept(
    kept: Kept,
    keys: Sequence[Verifier],
    rules: Mapping[str, Any] | None = None,
    witnesses: Sequence[Verifier] = (),
) -> Verified:
    """Every check of every receipt, record and proof kept, then of the receipts together;
    each receipt's checkpoint must carry a valid cosignature of each of ``witnesses``."""
    findings = list(kept.findings)
    heads: list[Head] = []
    shown = _Shown()
    for kept_receipt in kept.receipts:
        check = _ReceiptCheck(kept_receipt, keys, rules, witnesses, kept.boards)
        head = check.run()
        findings += check.findings
        if head is None:
            continue
        heads.append(head)
        findings += _shown_once(shown, head, kept_receipt)
    for name, record in kept.records:
        findings += _replayed(name, None, record, rules)
    findings += _forks(heads)
    findings += _consistency(heads, kept.proofs)
    records = sum(1 for r in kept.receipts if r.record is not None) + len(kept.records)
    return Verified(findings, len(kept.receipts), records, len(kept.proofs))


def _decoded(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise ValueError(f"{what} is not a base64 string")
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error:
        raise ValueError(f"{what} is not base64") from None


class _ReceiptCheck:
    """One receipt's own checks, in order: each needs the one before to hold."""

    def __init__(
        self,
        kept: KeptReceipt,
        keys: Sequence[Verifier],
        rules: Mapping[str, Any] | None,
        witnesses: Sequence[Verifier] = (),
        boards: Sequence[KeptBoards] = (),
    ) -> None:
        self.kept = kept
        self.keys = keys
        self.rules = rules
        self.witnesses = witnesses
        self.boards = boards
        self.board: tuple[KeptBoards, int, bytes] | None = None
        """A duplicate hand's event, board and the board's revealed seed, once they open its
        commitment."""
        self.findings: list[Finding] = []
        receipt = kept.receipt
        game_id, hand = receipt.get("game_id"), receipt.get("hand")
        self.game_id = game_id if isinstance(game_id, str) else None
        self.hand = hand if isinstance(hand, int) else None

    def caught(self, check: str, detail: str) -> None:
        self.findings.append(Finding(self.kept.file, self.game_id, self.hand, check, detail))

    def run(self) -> Head | None:
        try:
            head = self._signed()
            if head is None:
                return None
            self._witnessed()
            entry = self._included(head)
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            self.caught("unreadable", f"the receipt is malformed: {error!r}")
            return None
        if entry is None:
            return None
        self._deal(entry)
        if self.kept.record is not None:
            self._record(entry, self.kept.record)
            if self.board is not None:
                self._board_deal(self.kept.record, *self.board)
            else:
                self.findings.extend(
                    _replayed(self.kept.file, self.game_id, self.kept.record, self.rules)
                )
        return head

    def _signed(self) -> Head | None:
        receipt = self.kept.receipt
        origin, size = receipt["origin"], receipt["tree_size"]
        if not receipt.get("signed", True):
            self.caught("signature", "its checkpoint is not signed: the log had no key")
            return None
        try:
            opened = open_note(receipt["checkpoint"], list(self.keys))
            checkpoint = Checkpoint.parse(opened.text)
        except NoteError as error:
            self.caught("signature", f"its checkpoint does not open with the keys given: {error}")
            return None
        if origin not in opened.signed_by:
            signers = ", ".join(opened.signed_by) or "only witnesses"
            self.caught("signature", f"its checkpoint is signed by {signers}, not by {origin}")
            return None
        if (checkpoint.origin, checkpoint.size) != (origin, size):
            self.caught(
                "signature",
                f"the signed checkpoint is of {checkpoint.origin} at size {checkpoint.size}; "
                f"the receipt says {origin} at size {size}",
            )
            return None
        if self.game_id is None or self.hand is None:
            self.caught("unreadable", "the receipt names no game and hand")
            return None
        partition = int(receipt["partition"])
        return Head(
            origin, partition, size, checkpoint.root, self.kept.file, self.game_id, self.hand
        )

    def _witnessed(self) -> None:
        """Each witness given cosigned the receipt's checkpoint (its note, signed by the log,
        carries the witness's valid cosignature line)."""
        note = self.kept.receipt["checkpoint"]
        for witness in self.witnesses:
            problem = cosignature_problem(note, witness)
            if problem is not None:
                self.caught("witness", problem)

    def _included(self, head: Head) -> HandEnd | None:
        receipt = self.kept.receipt
        data = _decoded(receipt["entry_bytes"], "entry_bytes")
        proof = [_decoded(h, "an inclusion proof's hash") for h in receipt["inclusion_proof"]]
        index = receipt["leaf_index"]
        try:
            verify_inclusion(leaf_hash(data), index, head.size, proof, head.root)
        except ProofError as error:
            self.caught(
                "inclusion",
                f"its entry is not leaf {index} of the signed tree of {head.size}: {error}",
            )
            return None
        try:
            entry = read_entry(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            self.caught("entry", f"leaf {index} is no log entry: {error}")
            return None
        if not isinstance(entry, HandEnd):
            self.caught("entry", f"leaf {index} is a game's end, not a hand's")
            return None
        if (entry.game_id, entry.hand) != (self.game_id, self.hand):
            self.caught(
                "entry",
                f"leaf {index} is game {entry.game_id} hand {entry.hand}, not the receipt's",
            )
            return None
        said, signed = _as_json(receipt.get("entry")), _as_json(entry)
        if said != signed:
            differ = _differences(said, signed, "signed")
            self.caught(
                "entry", f"the receipt's entry says otherwise than the signed leaf: {differ}"
            )
        return entry

    def _deal(self, entry: HandEnd) -> None:
        deal = self.kept.receipt.get("deal")
        if entry.commitment is None:
            self.caught(
                "deal", f"the deal published no commitment: nobody can check it ({COMMITMENT_RULE})"
            )
            return
        if not isinstance(deal, Mapping):
            self.caught("deal", "the receipt names no deal commitment signed before the first bid")
        else:
            promised = (
                deal.get("hand"),
                deal.get("version"),
                deal.get("chain"),
                deal.get("commitment"),
            )
            logged = (entry.hand, entry.dealt_version, entry.dealt_chain, entry.commitment)
            if promised != logged:
                self.caught(
                    "deal",
                    f"the deal committed before the first bid (version {deal.get('version')}, "
                    f"commitment {str(deal.get('commitment'))[:16]}...) is not the one the log "
                    f"holds (version {entry.dealt_version}, commitment {entry.commitment[:16]}...)",
                )
        seed = seed_bytes(entry.seed)
        if seed is None and entry.seed is None and self._opened_by_its_board(entry.commitment):
            return
        if seed is None:
            self.caught(
                "deal",
                f"the hand was scored without a hex seed revealed ({COMMITMENT_RULE}); a "
                "duplicate event's board is revealed by its league: keep the league's answer "
                "(GET /v1/leagues/{id}, after the hand's round) in the folder",
            )
        elif commitment(seed) != entry.commitment:
            self.caught(
                "deal",
                f"the revealed seed hashes to {commitment(seed)[:16]}..., not to the commitment "
                f"{entry.commitment[:16]}... ({COMMITMENT_RULE})",
            )

    def _opened_by_its_board(self, promised: str) -> bool:
        """Whether the hand is a board of a kept duplicate event (its commitment is one of the
        event's published boards); if so, the board's revealed seed must open it, under the
        event's root (:func:`domain.boards.check_seed`)."""
        found = [(event, board) for event in self.boards if (board := event.board_of(promised))]
        if not found:
            return False
        event, board = found[0]
        text = event.revealed.get(board)
        if text is None:
            self.caught(
                "deal",
                f"board {board} of league {event.league_id} is not revealed in {event.file}: "
                "keep the league's answer from after the board's round",
            )
            return True
        seed = seed_bytes(text)
        try:
            if seed is None:
                raise BoardMismatch(f"board {board}'s revealed seed is not hex")
            check_seed(
                seed,
                board,
                board_proof(event.commitments, board),
                event.root,
                len(event.commitments),
            )
        except (BoardMismatch, ValueError) as error:
            self.caught("deal", f"league {event.league_id} ({event.file}): {error}")
            return True
        self.board = (event, board, seed)
        return True

    def _board_deal(
        self, record: Mapping[str, Any], event: KeptBoards, board: int, seed: bytes
    ) -> None:
        """A duplicate hand's record: dealt as the board from its revealed seed (the same
        dealer, hands and draw pile at every table), and replayed to its score under the
        event's rules."""
        try:
            rules = resolve_rules(dict(event.rules))
            bare = {name: value for name, value in record.items() if name in HAND_RECORD_FIELDS}
            (hand,) = hands_of_records([msgspec.convert(bare, HandRecord)], rules)
            check_table_deal(rules, seed, board, replace(hand.dealt, hand=board))
        except BoardMismatch as error:
            self.caught("deal", f"league {event.league_id}: {error}")
        except (ValueError, TypeError, msgspec.ValidationError) as error:
            self.caught("unreadable", f"the record cannot be read as a hand record: {error}")
            return
        opened = {**record, "deal": {**record["deal"], "seed": seed.hex()}}
        opened.pop("entropies", None)  # a board is shuffled by its number, with none
        self.findings.extend(_replayed(self.kept.file, self.game_id, opened, event.rules))

    def _record(self, entry: HandEnd, record: Mapping[str, Any]) -> None:
        logged = msgspec.to_builtins(entry)
        given = record.get("deal")
        deal: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        pairs = [(name, record.get(name), logged[name]) for name in RECORD_FIELDS]
        pairs += [
            ("hand", record.get("hand"), entry.hand),
            ("tricks", record.get("tricks_won"), logged["tricks"]),
            ("seed", deal.get("seed"), entry.seed),
            ("commitment", deal.get("commitment"), entry.commitment),
        ]
        for name, said, signed in pairs:
            if _normal(said) != _normal(signed):
                self.caught(
                    "record",
                    f"the record's {name} {_short(said)} are not the log's {_short(signed)}",
                )


def cosignature_problem(note: str, witness: Verifier) -> str | None:
    """What is wrong with ``witness``'s cosignature of the checkpoint ``note`` (C2SP
    ``cosignature/v1`` over its text and a time): None when it verifies."""
    mark = f"{SIGNATURE_MARK}{witness.name} "
    lines = [line for line in note.rpartition("\n\n")[2].splitlines() if line.startswith(mark)]
    ours = []
    for line in lines:
        try:
            payload = base64.b64decode(line.removeprefix(mark), validate=True)
        except binascii.Error:
            return f"the cosignature line of the witness {witness.name} is not base64"
        if payload[:4] == witness.key_id:
            ours.append(line)
    if not ours:
        return f"its checkpoint carries no cosignature of the witness {witness.name}"
    try:
        opened = open_note(note, [witness])
    except NoteError as error:
        return f"the witness {witness.name}'s cosignature of its checkpoint is forged: {error}"
    if witness.name not in opened.cosigned_at:
        return f"its checkpoint carries no cosignature of the witness {witness.name}"
    return None


def _as_json(value: Any) -> Any:
    """A value as JSON gives it back (tuples as lists): a receipt read from a file or built in
    memory compares alike."""
    return msgspec.json.decode(msgspec.json.encode(value))


def _normal(value: Any) -> Any:
    return list(value) if isinstance(value, tuple | list) else value


def _short(value: Any) -> str:
    text = str(_normal(value))
    return text if len(text) <= 40 else text[:16] + "..."


def _differences(here: Any, there: Mapping[str, Any], where: str) -> str:
    """The fields in which ``here`` differs from ``there`` (``where`` names it), each with both
    values."""
    if not isinstance(here, Mapping):
        return "it gives no entry"
    names = sorted(set(there) | set(here))
    return ", ".join(
        f"{name} {_short(here.get(name))} ({where}: {_short(there.get(name))})"
        for name in names
        if _normal(here.get(name)) != _normal(there.get(name))
    )


def _replayed(
    file: str, game_id: str | None, record: Mapping[str, Any], rules: Mapping[str, Any] | None
) -> list[Finding]:
    """The record played again under its rules: its deal from its seed, its score from its
    play (:func:`~services.audit.hand_record.audit_hand_records`)."""
    hand = record.get("hand") if isinstance(record.get("hand"), int) else None
    bare = {name: value for name, value in record.items() if name not in ("receipt", "score_lines")}
    try:
        audited = audit_hand_records(bare, rules)
    except UnreadableRecord as error:
        return [Finding(file, game_id, hand, "replay", f"the record cannot be replayed: {error}")]
    return [
        Finding(file, game_id, hand, "replay", f"{problem.detail} ({problem.rule})")
        for problem in audited.report.problems
    ]


@dataclass
class _Shown:
    """Each hand's leaf and each leaf's entry, as the first receipt that showed it."""

    hands: dict[tuple[str, str, int], tuple[KeptReceipt, int, str]] = field(default_factory=dict)
    leaves: dict[tuple[str, int], tuple[KeptReceipt, str]] = field(default_factory=dict)


def _shown_once(shown: _Shown, head: Head, kept: KeptReceipt) -> list[Finding]:
    """A log only appends: a hand is one leaf, at one index, for ever, and a leaf once signed
    holds one entry for ever. A hand shown at another index or with other bytes, or an index
    shown holding another entry, is history rewritten (edited, deleted, reordered) between the
    two receipts."""
    index, data = kept.receipt["leaf_index"], kept.receipt["entry_bytes"]
    what = []
    key = (head.origin, head.game_id, head.hand)
    first = shown.hands.setdefault(key, (kept, index, data))
    was = first[0]
    if first[1] != index:
        what.append(f"it was leaf {first[1]} in {was.file}, it is leaf {index} here")
    if first[2] != data:
        signed = _as_json(read_entry(_decoded(data, "entry_bytes")))
        other = _as_json(read_entry(_decoded(first[2], "entry_bytes")))
        what.append(f"its entry differs: {_differences(signed, other, f'in {was.file}')}")
    held = shown.leaves.setdefault((head.origin, index), (kept, data))
    before = read_entry(_decoded(held[1], "entry_bytes"))
    if held[1] != data and (before.game_id, getattr(before, "hand", None)) != key[1:]:
        hand = f" hand {before.hand}" if isinstance(before, HandEnd) else "'s end"
        what.append(
            f"leaf {index} held game {before.game_id}{hand} in {held[0].file}, it holds game "
            f"{head.game_id} hand {head.hand} here"
        )
    if not what:
        return []
    detail = "the log shows its history two ways: " + "; ".join(what)
    return [Finding(kept.file, head.game_id, head.hand, "rewritten", detail)]


def _forks(heads: Sequence[Head]) -> list[Finding]:
    """Two signed trees of one log and one size with different heads: the log showed two
    histories."""
    first: dict[tuple[str, int], dict[bytes, Head]] = {}
    findings: list[Finding] = []
    for head in heads:
        roots = first.setdefault((head.origin, head.size), {})
        if head.root in roots:
            continue
        for other in roots.values():
            findings.append(
                Finding(
                    head.file,
                    head.game_id,
                    head.hand,
                    "fork",
                    f"{head.origin} signed two different trees of size {head.size}: this "
                    f"receipt's and that of {other.named()}",
                )
            )
        roots[head.root] = head
    return findings


def _consistency(heads: Sequence[Head], proofs: Sequence[KeptProof]) -> list[Finding]:
    """Every pair of sizes of a log proven consistent by the proofs kept: each proof whose
    sizes are two checkpoints' is checked against their signed heads (a failure is history
    rewritten); sizes that no chain of proofs joins are unproven."""
    findings: list[Finding] = []
    failed: set[int] = set()
    by_log: dict[str, dict[int, Head]] = {}
    for head in heads:
        by_log.setdefault(head.origin, {}).setdefault(head.size, head)
    for origin, sizes in sorted(by_log.items()):
        partition = next(iter(sizes.values())).partition
        proven: dict[int, set[int]] = {size: set() for size in sizes}
        for kept in proofs:
            joined = _joined(kept, partition, sizes)
            if joined is None:
                continue
            old, new = joined
            try:
                proof = [_decoded(h, "a consistency proof's hash") for h in kept.proof["proof"]]
                verify_consistency(old.size, new.size, old.root, new.root, proof)
            except (ProofError, ValueError, KeyError) as error:
                failed.add(id(kept))
                findings.append(
                    Finding(
                        kept.file,
                        new.game_id,
                        new.hand,
                        "consistency",
                        f"{origin}'s tree of {new.size} signed for {new.named()} does not "
                        f"extend its tree of {old.size} signed for {old.named()}: {error}",
                    )
                )
                continue
            proven[old.size].add(new.size)
        findings += _unproven(origin, partition, sizes, proven)
    findings += _unanchored([kept for kept in proofs if id(kept) not in failed])
    return findings


def _joined(kept: KeptProof, partition: int, sizes: Mapping[int, Head]) -> tuple[Head, Head] | None:
    """The two checkpoints a proof is between, when it is one of this log's (its partition,
    two sizes the log signed, and one of their heads its own)."""
    proof = kept.proof
    old_size, new_size = proof.get("old"), proof.get("new")
    if not isinstance(old_size, int) or not isinstance(new_size, int):
        return None
    old, new = sizes.get(old_size), sizes.get(new_size)
    if proof.get("partition") != partition or old is None or new is None or old.size >= new.size:
        return None
    try:
        roots = (_decoded(proof["old_root"], "old_root"), _decoded(proof["new_root"], "new_root"))
    except ValueError:
        return old, new
    return (old, new) if old.root in roots or new.root in roots else None


def _unproven(
    origin: str, partition: int, sizes: Mapping[int, Head], proven: Mapping[int, set[int]]
) -> list[Finding]:
    """Consecutive sizes that no proofs join (one a prefix of the other, or both prefixes of a
    third): not a failure, but nothing shows the two trees are one history."""

    def reach(size: int) -> set[int]:
        seen, todo = {size}, [size]
        while todo:
            for bigger in proven[todo.pop()]:
                if bigger not in seen:
                    seen.add(bigger)
                    todo.append(bigger)
        return seen

    ordered = sorted(sizes)
    findings = []
    for old, new in itertools.pairwise(ordered):
        if reach(old) & reach(new):
            continue
        later = sizes[new]
        command = (
            f"curl 'https://<service>/v1/log/{partition}/proofs/consistency?old={old}&new={new}'"
        )
        findings.append(
            Finding(
                later.file,
                later.game_id,
                later.hand,
                "unproven",
                f"no proof in the folder that {origin}'s tree of {new} (here) extends its tree of "
                f"{old} ({sizes[old].named()})",
                warning=True,
                command=command,
            )
        )
    return findings


def _unanchored(proofs: Sequence[KeptProof]) -> list[Finding]:
    """A proof checked against its own heads: one that fails there is a lie whatever it joins."""
    findings = []
    for kept in proofs:
        proof = kept.proof
        try:
            verify_consistency(
                int(proof["old"]),
                int(proof["new"]),
                _decoded(proof["old_root"], "old_root"),
                _decoded(proof["new_root"], "new_root"),
                [_decoded(h, "a consistency proof's hash") for h in proof["proof"]],
            )
        except (ProofError, ValueError, KeyError, TypeError) as error:
            findings.append(
                Finding(
                    kept.file,
                    None,
                    None,
                    "consistency",
                    f"the proof from {proof.get('old')} to {proof.get('new')} does not hold "
                    f"even for its own tree heads: {error}",
                )
            )
    return findings
