"""``spades verify FOLDER --key KEY [--witness KEY]``: check kept receipts, hand records and
consistency proofs offline, with nothing of ours but the log's public keys, and the keys of the
witnesses whose cosignature every receipt must carry (:mod:`services.audit.verify`).

Exit 0 when everything holds (warnings, such as two trees no kept proof joins, do not fail), 1
when anything is caught, 2 when the folder, a file in it, a key or ``--rules`` cannot be read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from services.audit.verify import read_kept, verify_kept
from services.cli.audit import CLEAN, PROBLEM, JsonOption, RulesOption, rules_option, unreadable
from services.transparency.note import COSIGNATURE, NoteError, Verifier

FolderArgument = Annotated[
    Path,
    typer.Argument(help="The folder of kept hand records, receipts and consistency proofs."),
]
KeyOption = Annotated[
    list[str],
    typer.Option(
        "--key",
        help="A log's verifier key, as GET /v1/log lists them (<name>+<id>+<base64>); repeat it "
        "for each log (partition).",
    ),
]

WitnessOption = Annotated[
    list[str] | None,
    typer.Option(
        "--witness",
        help="A witness's verifier key (<name>+<id>+<base64>, as `spades witness keys` prints "
        "it), or a file holding it: every receipt's checkpoint must carry its valid "
        "cosignature. Repeat it for each witness.",
    ),
]


def verify(
    folder: FolderArgument,
    key: KeyOption,
    rules: RulesOption = None,
    as_json: JsonOption = False,
    witness: WitnessOption = None,
) -> None:
    """Check a folder of receipts offline: signatures, inclusion, each deal against its
    revealed seed (a duplicate hand's: its board's, from the league's answer kept beside it),
    each hand record against its log entry and replayed to its score, the
    trees of one log against each other (forks, consistency proofs), and with ``--witness``
    each receipt's cosignature by that witness. Exit 0 all holds, 1 caught, 2 unreadable."""
    keys = _keys(key)
    witnesses = [_witness(text) for text in witness or []]
    table_rules = rules_option(rules)
    verified = verify_kept(read_kept(_documents(folder)), keys, table_rules, witnesses)
    if as_json:
        json.dump(verified.as_json(), sys.stdout)
        sys.stdout.write("\n")
    else:
        for finding in verified.findings:
            typer.echo(finding.told())
        caught = sum(1 for finding in verified.findings if not finding.warning)
        typer.echo(
            f"{verified.receipts} receipts, {verified.records} hand records, {verified.proofs} "
            f"consistency proofs: " + (f"{caught} caught" if caught else "all holds")
        )
    raise typer.Exit(CLEAN if verified.ok else PROBLEM)


def _keys(texts: list[str]) -> list[Verifier]:
    if not texts:
        unreadable("give the log's verifier keys with --key (GET /v1/log lists them)")
    keys = []
    for text in texts:
        try:
            keys.append(Verifier.parse(text))
        except NoteError as error:
            unreadable(f"--key {text[:40]!r}: {error}")
    return keys


def _witness(given: str) -> Verifier:
    """A witness's key from ``--witness``: the key's text, or a file holding it (alone, or as
    the witness's ``GET /`` names it: ``witness <key>``)."""
    try:
        verifier = Verifier.parse(given)
    except NoteError as error:
        try:
            lines = Path(given).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            unreadable(f"--witness {given[:40]!r}: neither a key ({error}) nor a readable file")
        named = [line.removeprefix("witness ").strip() for line in lines]
        text = next((line for line in named if line and not line.startswith("log ")), "")
        try:
            verifier = Verifier.parse(text)
        except NoteError as error:
            unreadable(f"--witness {given[:40]!r}: the file holds no witness's key ({error})")
    if verifier.kind != COSIGNATURE:
        unreadable(f"--witness {given[:40]!r}: a log's key, not a witness's (it cosigns)")
    return verifier


def _documents(folder: Path) -> list[tuple[str, Any]]:
    """Every JSON file under ``folder``, parsed, named by its path within it."""
    if not folder.is_dir():
        unreadable(f"{folder}: not a folder")
    documents = []
    for path in sorted(folder.rglob("*.json")):
        name = str(path.relative_to(folder))
        try:
            documents.append((name, json.loads(path.read_text(encoding="utf-8"))))
        except OSError as error:
            unreadable(f"{path}: cannot be read ({error.strerror})")
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            unreadable(f"{path}: not JSON ({error})")
    if not documents:
        unreadable(f"{folder}: no JSON file to verify")
    return documents
