"""``spades audit``: settle a disputed game or hand from its record.

Three sources: a game's live stream (``GAME_ID``, from ``--nats-url``, ``SPADES_NATS_URL`` or the
running ``spades up``), a copy of its stored commits (``--commits FILE``, as ``--export`` writes
them, so a copy that has been tampered with can be audited too), or a hand played elsewhere
(``--record FILE``, a hand record or a tally, under ``--rules``). Exit 0 when the record is
clean, 1 when a problem is found (the report says which and why), 2 when the input cannot be
read (or no stack is found).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

from domain.seating import GAME_ID
from services.audit.commit_file import UnreadableCommits, commit_lines, read_commit_lines
from services.audit.hand_record import RecordAudit, audit_hand_records, exported_records
from services.audit.record_file import UnreadableRecord
from services.audit.render import tell_hand, tell_report
from services.audit.replay import Replay, replay_game
from services.audit.report import AuditReport
from services.cli.discover import stack_settings
from services.runtime.broker_users import ADMIN
from services.runtime.game_stream import GameStream, StoredCommit, deployed_partitions
from services.runtime.logging import configure_logging
from services.runtime.nats import connect
from services.runtime.settings import Settings, get_settings

CLEAN, PROBLEM, UNREADABLE = 0, 1, 2

GameIdArgument = Annotated[
    str | None, typer.Argument(help="The game to audit, read from the live stream.")
]
RecordOption = Annotated[
    Path | None,
    typer.Option("--record", help="A hand played elsewhere: a hand record or a tally (JSON)."),
]
CommitsOption = Annotated[
    Path | None,
    typer.Option("--commits", help="A copy of a game's stored commits (JSON lines, --export)."),
]
HandOption = Annotated[int | None, typer.Option("--hand", help="Tell this hand in full.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the report as JSON.")]
RulesOption = Annotated[
    str | None,
    typer.Option("--rules", help='The table\'s rules, e.g. \'{"preset": "cutthroat"}\'.'),
]
NatsUrlOption = Annotated[
    str | None,
    typer.Option(
        "--nats-url", help="NATS server (default: SPADES_NATS_URL, else the running `spades up`)."
    ),
]
ExportOption = Annotated[
    bool,
    typer.Option("--export", help="Print the game's stored commits as JSON lines, byte for byte."),
]
RecordsOption = Annotated[
    bool,
    typer.Option("--records", help="Print the finished hands' records as JSON (for --record)."),
]


def audit(
    game_id: GameIdArgument = None,
    record: RecordOption = None,
    commits: CommitsOption = None,
    hand: HandOption = None,
    as_json: JsonOption = False,
    rules: RulesOption = None,
    nats_url: NatsUrlOption = None,
    export: ExportOption = False,
    records: RecordsOption = False,
) -> None:
    """Check a game's hash chain and deals, replay every event through the rules and recompute
    every score; or audit a hand played elsewhere. Exit 0 clean, 1 problem found, 2 unreadable
    input."""
    sources = [given for given in (game_id, record, commits) if given is not None]
    if len(sources) != 1:
        unreadable("give one of GAME_ID, --record FILE or --commits FILE")
    if record is not None:
        if export or records:
            unreadable("--export and --records take a game, not a record")
        _audit_record(record, rules, hand, as_json)
    if rules is not None:
        unreadable("--rules is for --record: a game's record holds its own rules")
    stored = _stored_commits(game_id, commits, nats_url)
    if export:
        sys.stdout.buffer.write(commit_lines(stored))
        raise typer.Exit(CLEAN)
    replay = replay_game(stored)
    if records:
        _print_records(replay, hand)
        raise typer.Exit(CLEAN)
    report = replay.report(reveal_open_hand=True)
    subject = f"game {game_id}" if game_id is not None else str(commits)
    if as_json:
        _print_json(_only_hand(report.as_json(), hand))
    else:
        _tell_game(replay, report, subject, hand)
    raise typer.Exit(CLEAN if report.ok else PROBLEM)


def unreadable(why: str) -> NoReturn:
    typer.echo(f"error: {why}", err=True)
    raise typer.Exit(UNREADABLE)


def _stored_commits(
    game_id: str | None, commits: Path | None, nats_url: str | None
) -> list[StoredCommit]:
    if commits is not None:
        try:
            return read_commit_lines(commits.read_bytes())
        except OSError as error:
            unreadable(f"{commits}: cannot be read ({error.strerror})")
        except UnreadableCommits as error:
            unreadable(f"{commits}: line {error.line}: {error.why}")
    assert game_id is not None
    if not GAME_ID.fullmatch(game_id):
        unreadable(f"{game_id!r} is not a game id")
    stored = _read_stream(game_id, nats_url)
    if not stored:
        unreadable(f"no game {game_id}")
    return stored


def _read_stream(game_id: str, nats_url: str | None) -> list[StoredCommit]:
    settings = stack_settings(get_settings(), nats_url=nats_url)
    configure_logging(settings, "WARNING")  # to stderr: stdout holds the report or copy
    try:
        return asyncio.run(_read_game(settings, game_id))
    except (ConnectionError, OSError, TimeoutError) as error:
        unreadable(f"the event store cannot be read: {error}")


async def _read_game(settings: Settings, game_id: str) -> list[StoredCommit]:
    assert settings.nats_url is not None
    connection = await connect(
        settings.nats_url,
        "spades-audit",
        user=ADMIN,
        credentials=settings.nats_credentials(ADMIN),
    )
    try:
        js = connection.jetstream()
        return await GameStream(js, await deployed_partitions(js, settings.layout)).read(game_id)
    finally:
        await connection.close()


def _audit_record(path: Path, rules: str | None, hand: int | None, as_json: bool) -> NoReturn:
    document = _json_file(path)
    table_rules = rules_option(rules)
    try:
        audited = audit_hand_records(document, table_rules)
    except UnreadableRecord as error:
        unreadable(f"{path}: {error.where}: {error.why}")
    report = audited.report
    if as_json:
        out = _only_hand(report.as_json(), hand)
        out["rules"] = audited.rules.to_json()
        _print_json(out)
    else:
        _tell_record(audited, str(path), hand)
    raise typer.Exit(CLEAN if report.ok else PROBLEM)


def _json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        unreadable(f"{path}: cannot be read ({error.strerror})")
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        unreadable(f"{path}: not JSON ({error})")


def rules_option(rules: str | None) -> dict[str, Any] | None:
    if rules is None:
        return None
    try:
        parsed = json.loads(rules)
    except json.JSONDecodeError as error:
        unreadable(f"--rules: not JSON ({error})")
    if not isinstance(parsed, dict):
        unreadable('--rules: a rule set is a JSON object, e.g. {"preset": "partnership"}')
    return parsed


def _only_hand(report: dict[str, Any], hand: int | None) -> dict[str, Any]:
    """The report, its hands narrowed to one when ``--hand`` asks for it."""
    if hand is not None:
        report["hands"] = [entry for entry in report["hands"] if entry["hand"] == hand]
    return report


def _print_json(value: Any) -> None:
    json.dump(value, sys.stdout)
    sys.stdout.write("\n")


def _print_records(replay: Replay, hand: int | None) -> None:
    exported = exported_records(replay)
    if hand is None:
        _print_json({"hands": exported})
        return
    chosen = [record for record in exported if record["hand"] == hand]
    if not chosen:
        unreadable(f"hand {hand} is not a finished hand of this game")
    _print_json(chosen[0])


def _tell_game(replay: Replay, report: AuditReport, subject: str, hand: int | None) -> None:
    console = Console()
    console.print(tell_report(report, subject))
    if hand is None:
        return
    account = next((a for a in replay.hands if a.number == hand), None)
    if account is None:
        console.print(f"There is no hand {hand} in this game.", style="yellow")
        return
    problems = [problem for problem in report.problems if problem.hand == hand]
    console.print(tell_hand(account, problems))


def _tell_record(audited: RecordAudit, subject: str, hand: int | None) -> None:
    console = Console()
    report = audited.report
    console.print(tell_report(report, subject))
    for account in audited.hands:
        if hand is None or account.number == hand:
            problems = [problem for problem in report.problems if problem.hand == account.number]
            console.print(tell_hand(account, problems))
