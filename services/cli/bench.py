"""``spades bench ...``: the measured figures of each part, against a named peer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import msgspec
import typer
from rich.console import Console
from rich.table import Table

from services.cli.projections import bench as bench_projections

if TYPE_CHECKING:
    from benchmarks.http import SideFigures

app = typer.Typer(no_args_is_help=True, help="Benchmarks: print figures and ratios to a peer.")
console = Console(stderr=True)


@app.command("engine")
def engine(
    hands: Annotated[int, typer.Option(help="Hands per round.")] = 2000,
    preset: Annotated[str, typer.Option(help="Rules preset.")] = "partnership",
    seed: Annotated[int, typer.Option(help="Seed of the random players.")] = 1,
    rounds: Annotated[int, typer.Option(help="Rounds; the best of each side counts.")] = 3,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """Random legal hands through legal_actions + decide + evolve, against OpenSpiel's Spades."""
    from benchmarks.engine import run

    figures = run(preset, hands, seed, rounds, progress=None if json else console.print)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(title=f"engine: {hands} random legal hands of {preset}, best of {rounds}")
    table.add_column("engine")
    table.add_column("hands/s", justify="right")
    table.add_row("spades (domain/)", f"{figures.hands_per_s:,.0f}")
    if figures.peer_hands_per_s is not None:
        table.add_row("OpenSpiel C++ spades", f"{figures.peer_hands_per_s:,.0f}")
    table.add_row(
        "the harness alone (rules that cost nothing)", f"{figures.floor_hands_per_s:,.0f}"
    )
    Console().print(table)
    typer.echo(f"our rules: {figures.rules_us_per_action:.2f} us an action")
    if figures.ratio is not None:
        typer.echo(f"ratio (ours / OpenSpiel): {figures.ratio:.2f}")
        typer.echo(
            f"to match OpenSpiel, the rules may take {figures.budget_us_per_action:.2f} us an"
            f" action (the harness alone reaches {figures.floor_ratio:.2f} of OpenSpiel)"
        )
    else:
        typer.echo("OpenSpiel is not installed (pip install -e '.[bench]'): no ratio")


@app.command("commands")
def commands(
    games: Annotated[int, typer.Option(help="Games played at once.")] = 32,
    count: Annotated[int, typer.Option("--commands", help="Commands in all.")] = 8000,
    engines: Annotated[int, typer.Option(help="Engine processes.")] = 1,
    preset: Annotated[str, typer.Option(help="Rules preset.")] = "partnership",
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """Commands/s and latency through the engine over NATS, against raw JetStream publishes
    and a bare relay (an append and a reply per request: the floor of any engine)."""
    from benchmarks.commands import run

    figures = run(games, count, engines, preset)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(title=f"commands: {figures.commands} over {games} games, {engines} engine(s)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("commands/s", f"{figures.commands_per_s:,.0f}")
    table.add_row("latency p50", f"{figures.p50_ms:.2f} ms")
    table.add_row("latency p99", f"{figures.p99_ms:.2f} ms")
    table.add_row("raw JetStream publishes/s", f"{figures.baseline_publish_per_s:,.0f}")
    table.add_row("mean commit size", f"{figures.mean_commit_bytes} B")
    table.add_row("ratio commands / publishes", f"{figures.ratio:.2f}")
    table.add_row("bare relay requests/s (append, ack, reply)", f"{figures.relay_per_s:,.0f}")
    table.add_row("ratio commands / relay", f"{figures.relay_ratio:.2f}")
    table.add_row("ceiling: relay / publishes", f"{figures.relay_ceiling:.2f}")
    for label, cpu in (
        ("CPU us per command", figures.cpu_us_per_command),
        ("CPU us per raw publish", figures.baseline_cpu_us_per_publish),
        ("CPU us per relay request", figures.relay_cpu_us_per_request),
    ):
        table.add_row(label, ", ".join(f"{name} {us:.0f}" for name, us in sorted(cpu.items())))
    Console().print(table)


app.command("projections")(bench_projections)


@app.command("league-night")
def league_night(
    players: Annotated[int, typer.Option(help="Players in the league.")] = 256,
    rounds: Annotated[int, typer.Option(help="Rounds to play.")] = 4,
    count: Annotated[int, typer.Option("--partitions", "-k", help="K, the partitions.")] = 3,
    idle: Annotated[float, typer.Option(help="Share of the players who never act.")] = 0.1,
    turn_s: Annotated[float, typer.Option(help="The league clock's seconds a turn.")] = 2.0,
    kill_round: Annotated[int, typer.Option(help="The round the kills happen in.")] = 2,
    concurrency: Annotated[int, typer.Option(help="Games played at once.")] = 32,
    database_url: Annotated[
        str, typer.Option(help="PostgreSQL (a schema of the night's own is made in it).")
    ] = "postgresql://postgres@127.0.0.1:5432/test",
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
    keep: Annotated[
        Path | None, typer.Option(help="Keep the processes' logs and data in this directory.")
    ] = None,
) -> None:
    """A league night on a three-node loopback cluster, two of every process on PostgreSQL: one
    of each worker kind and a node leading a partition killed with SIGKILL during a round; every
    round ends, every game audits clean, the read models equal a rebuild, every webhook arrives
    once, every timeout is one action; the time each kind took to fail over."""
    from benchmarks.league_night import NightPlan, fresh_schema_url, run

    plan = NightPlan(
        players=players,
        rounds=rounds,
        partitions=count,
        idle=idle,
        turn_s=turn_s,
        kill_round=kill_round,
        concurrency=concurrency,
    )
    report = run(plan, fresh_schema_url(database_url), keep)
    if json:
        typer.echo(msgspec.json.encode(report).decode())
        return
    table = Table(title=f"league night: {players} players, {rounds} rounds, K = {count}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("rounds finished", f"{report.rounds_finished} of {rounds}")
    table.add_row(
        "games, commits, timeouts", f"{report.games}, {report.commits}, {report.timeouts}"
    )
    table.add_row("bots' actions", f"{report.actions}")
    table.add_row("seconds", f"{report.seconds}")
    for failover in report.failovers:
        took = "not in time" if failover.seconds is None else f"{failover.seconds:.2f} s"
        table.add_row(f"fail-over: {failover.kind} ({failover.killed})", took)
    table.add_row("histories not sound or not clean", str(len(report.history_problems)))
    table.add_row("turns timed out twice", str(len(report.timed_out_twice)))
    table.add_row("read-model tables unlike a rebuild", str(len(report.read_model_differences)))
    table.add_row(
        "webhooks expected / received",
        f"{report.webhooks_expected} / {report.webhooks_received}",
    )
    table.add_row(
        "webhooks missing / out of order",
        f"{len(report.webhooks_missing)} / {len(report.webhooks_out_of_order)}",
    )
    table.add_row(
        "webhook-ids twice (in flight at the kill / not)",
        f"{report.webhooks_twice} / {len(report.webhooks_twice_not_in_flight)}",
    )
    table.add_row("verdict", "ok" if report.ok else "NOT OK")
    Console().print(table)
    for what, found in (
        ("histories", report.history_problems),
        ("timed out twice", report.timed_out_twice),
        ("read-model tables unlike a rebuild", report.read_model_differences),
        ("webhooks missing", report.webhooks_missing),
        ("webhooks out of order", report.webhooks_out_of_order),
        ("webhook-ids twice, not in flight at the kill", report.webhooks_twice_not_in_flight),
    ):
        if found:
            typer.echo(f"{what}: {', '.join(map(str, found[:20]))}", err=True)


@app.command("partitions")
def partitions(
    count: Annotated[int, typer.Option("--partitions", "-k", help="K, the partitions.")] = 3,
    publishers: Annotated[int, typer.Option(help="Publishers at once.")] = 48,
    seconds: Annotated[float, typer.Option(help="Seconds a publish round lasts.")] = 8.0,
    rounds: Annotated[int, typer.Option(help="Rounds of each side, alternating.")] = 2,
    games: Annotated[int, typer.Option(help="Games played at once.")] = 48,
    commands: Annotated[int, typer.Option(help="Commands in all, per side.")] = 6000,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """On a three-node loopback cluster: raw acknowledged publishes to one R3 stream against K
    (leaders on different nodes), and commands/s through two engines with 1 and K partitions."""
    from benchmarks.partitions import run

    figures = run(count, publishers, seconds, rounds, games, commands)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(title=f"partitions: 1 against {count} on three nodes, R3")
    for column in ("side", "rate/s", "CPU us each", "where"):
        table.add_column(column, justify="left" if column in ("side", "where") else "right")
    for one in figures.publish_rounds:
        shares = " ".join(f"{n} {s:.0%}" for n, s in sorted(one.node_cpu_share.items()))
        table.add_row(
            f"publishes to {one.streams} stream(s)",
            f"{one.publishes_per_s:,.0f}",
            f"{one.cluster_cpu_us_per_publish:.0f} (cluster)",
            f"node CPU {shares}; leaders {', '.join(sorted(one.leaders.values()))}",
        )
    for side in figures.command_rounds:
        cpu = ", ".join(f"{n} {us:.0f}" for n, us in sorted(side.cpu_us_per_command.items()))
        table.add_row(
            f"commands, {side.partitions} partition(s)",
            f"{side.commands_per_s:,.0f}",
            cpu,
            f"p50 {side.p50_ms:.1f} ms, p99 {side.p99_ms:.1f} ms",
        )
    table.add_row("ratio publishes K / 1", f"{figures.publishes_ratio:.2f}", "", "")
    table.add_row("ratio cluster CPU a publish K / 1", "", f"{figures.cpu_ratio:.2f}", "")
    table.add_row("ratio commands K / 1", f"{figures.commands_ratio:.2f}", "", "")
    Console().print(table)


@app.command("rebuild")
def rebuild(
    games: Annotated[int, typer.Option(help="Finished games in the stream.")] = 2000,
    count: Annotated[int, typer.Option("--partitions", "-k", help="K, the partitions.")] = 3,
    workers: Annotated[int, typer.Option(help="Projections processes sharing them.")] = 2,
    model: Annotated[str, typer.Option(help="The one model rebuilt alone.")] = "hands",
    database_url: Annotated[
        str | None,
        typer.Option("--database-url", help="PostgreSQL to rebuild into (default: SQLite)."),
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """A rebuild of one read model and of every one, K partitions replayed by projections
    processes that share them (and the first replay, into empty tables)."""
    from benchmarks.rebuild import run

    figures = run(games, count, workers, database_url, model)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(
        title=f"rebuild: {figures.games:,} games, {figures.messages:,} messages, "
        f"{figures.partitions} partition(s), {figures.workers} worker(s), {figures.store}"
    )
    for column in ("replay", "seconds", "ms a game", "CPU s of each worker"):
        table.add_column(column, justify="left" if column == "replay" else "right")
    table.add_row(
        "first, every model",
        f"{figures.first_replay_s:.1f}",
        f"{figures.first_replay_s * 1000 / figures.games:.2f}",
        "",
    )
    for name, seconds, cpu in (
        (f"rebuild {figures.model}", figures.model_s, figures.model_cpu_s),
        ("rebuild --all", figures.all_s, figures.all_cpu_s),
    ):
        spent = " + ".join(f"{one:.1f}" for one in cpu)
        table.add_row(name, f"{seconds:.1f}", f"{seconds * 1000 / figures.games:.2f}", spent)
    Console().print(table)
    typer.echo(f"partitions held: {figures.held}")


@app.command("gets")
def gets(
    subjects: Annotated[int, typer.Option(min=1, help="Histories in each stream.")] = 500,
    count: Annotated[int, typer.Option("--gets", min=1, help="Gets a round, per side.")] = 20_000,
    concurrency: Annotated[int, typer.Option(min=1, help="Gets asked at once.")] = 16,
    rounds: Annotated[int, typer.Option(min=1, help="Rounds; the best of each side.")] = 3,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """A view's question to the stream ("anything after?"): the server's CPU per direct get,
    against the leader's STREAM.MSG.GET of the same question."""
    from benchmarks.gets import run

    figures = run(subjects=subjects, gets=count, concurrency=concurrency, rounds=rounds)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(title=f"gets: {figures.gets} a round, {concurrency} at once, best of {rounds}")
    table.add_column("measure")
    table.add_column("direct get (the service)", justify="right")
    table.add_column("STREAM.MSG.GET (peer)", justify="right")
    direct, leader = figures.direct, figures.leader
    table.add_row("gets/s", f"{direct.gets_per_s:,.0f}", f"{leader.gets_per_s:,.0f}")
    for name in sorted(direct.cpu_us.keys() | leader.cpu_us.keys()):
        table.add_row(
            f"CPU us per get: {name}",
            f"{direct.cpu_us.get(name, 0.0):.1f}",
            f"{leader.cpu_us.get(name, 0.0):.1f}",
        )
    Console().print(table)
    typer.echo(f"ratio (the server's CPU per get, peer / service): {figures.ratio:.2f}")


@app.command("round-watch")
def round_watch(
    games: Annotated[int, typer.Option(min=2, help="Games whose commits are triaged.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the random games.")] = 1,
    rounds: Annotated[int, typer.Option(min=1, help="Rounds; the best of each side.")] = 5,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """The engines' round watch: CPU per game commit to find the ends of league tables,
    against decoding every commit."""
    from benchmarks.round_watch import run

    figures = run(games, seed, rounds)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(
        title=f"round watch: {figures.commits} commits of {games} games, best of {rounds}"
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("triage per commit (the watch)", f"{figures.triage_ns_per_commit:,.0f} ns")
    table.add_row("decoding per commit (peer)", f"{figures.decode_ns_per_commit:,.0f} ns")
    table.add_row("table ends found", str(figures.ending))
    table.add_row("ratio (peer / watch)", f"{figures.ratio:.1f}")
    Console().print(table)


@app.command("e2e")
def e2e(
    games: Annotated[int, typer.Option(min=1, help="Bot games to play.")] = 16,
    concurrency: Annotated[int, typer.Option(min=1, help="Games played at once.")] = 8,
    preset: Annotated[str, typer.Option(help="Rules preset.")] = "partnership",
    url: Annotated[
        str | None,
        typer.Option("--url", envvar="SPADES_URL", help="A running stack (default: start one)."),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", envvar="SPADES_API_KEY", help="Platform key (SPADES_API_KEY)."),
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """Bot games through HTTP on the whole stack: actions/s, action latency and projection lag,
    against the commands benchmark (the engine over NATS without HTTP)."""
    from benchmarks.e2e import run
    from services.bots.runner import GameOutcome

    def finished(outcome: GameOutcome) -> None:
        if not json:
            console.print(
                f"game {outcome.game_id}: {outcome.actions} actions, {outcome.hands} hands"
            )

    figures = run(games, concurrency, preset, url=url, api_key=api_key, on_game=finished)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(title=f"e2e: {figures.games} {preset} bot games over HTTP, {concurrency} at once")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("actions", f"{figures.actions:,} ({figures.refused} refused, sent again)")
    table.add_row("actions/s", f"{figures.actions_per_s:,.1f}")
    for name, value in (("p50", figures.p50_ms), ("p95", figures.p95_ms), ("p99", figures.p99_ms)):
        table.add_row(f"action latency {name}", f"{value:.1f} ms")
    table.add_row("projection lag, max", f"{figures.max_lag} messages")
    table.add_row("projection lag at the last action", f"{figures.lag_at_end} messages")
    table.add_row("read models hold the last action after", f"{figures.catch_up_ms:.0f} ms")
    table.add_row("commands/s without HTTP (same concurrency)", f"{figures.commands_per_s:,.0f}")
    table.add_row(
        "command latency p50 / p99",
        f"{figures.commands_p50_ms:.1f} / {figures.commands_p99_ms:.1f} ms",
    )
    table.add_row("ratio actions / commands", f"{figures.ratio:.3f}")
    Console().print(table)


@app.command("webhooks")
def webhooks(
    games: Annotated[int, typer.Option(min=1, help="Bot games to play.")] = 16,
    concurrency: Annotated[int, typer.Option(min=1, help="Games played at once.")] = 8,
    preset: Annotated[str, typer.Option(help="Rules preset.")] = "partnership",
    hands: Annotated[int, typer.Option(min=1, help="Hands per game (max_hands).")] = 1,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            envvar="SPADES_URL",
            help="A running stack with SPADES_WEBHOOK_ALLOW_PRIVATE=1 (default: start one).",
        ),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", envvar="SPADES_API_KEY", help="Platform key (SPADES_API_KEY)."),
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """Webhooks to a local receiver: the lag from commit to delivery while bot games are
    played (with their action latency), and deliveries/s draining a replay, against raw POSTs
    of the same bodies to the same receiver."""
    from benchmarks.webhooks import run

    figures = run(games, concurrency, preset, hands, url=url, api_key=api_key)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(
        title=f"webhooks: {figures.games} {preset} games, {concurrency} at once, "
        f"{figures.deliveries} deliveries"
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row(
        "lag commit -> delivery p50 / p99",
        f"{figures.lag_p50_ms:.1f} / {figures.lag_p99_ms:.1f} ms",
    )
    table.add_row(
        "action latency p50 / p99", f"{figures.action_p50_ms:.1f} / {figures.action_p99_ms:.1f} ms"
    )
    table.add_row("deliveries/s (a replay of them all)", f"{figures.deliveries_per_s:,.0f}")
    table.add_row(
        "raw POSTs/s to the receiver (same concurrency)", f"{figures.raw_posts_per_s:,.0f}"
    )
    table.add_row("ratio deliveries / raw POSTs", f"{figures.ratio:.3f}")
    Console().print(table)


@app.command("timers")
def timers(
    games: Annotated[int, typer.Option(min=1, help="Games on the clock at once.")] = 5000,
    acting: Annotated[
        float, typer.Option(min=0, max=1, help="Share of games whose seats act, slowly.")
    ] = 0.1,
    turn_s: Annotated[float, typer.Option(min=0.05, help="Each turn's clock.")] = 60.0,
    window_s: Annotated[float, typer.Option(min=1, help="Seconds measured.")] = 60.0,
    seed: Annotated[int, typer.Option(help="Seed of the game ids and the slow seats.")] = 1,
    history: Annotated[
        int,
        typer.Option(
            min=0,
            help="Measure a restart instead: N finished games in the stream, one table on the "
            "clock (--turn-s), the timer worker killed and started again.",
        ),
    ] = 0,
    partitions: Annotated[
        int, typer.Option(min=1, help="Partitions of the game stream (with --history).")
    ] = 1,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """Thousands of clocks at once: the timer worker's CPU per timeout and how late timeouts
    come past their deadlines (p50, p99), against the engine's CPU per timeout. With
    ``--history N``: how soon a killed timer worker's table moves again after N finished
    games."""
    from benchmarks.timers import run

    if history:
        timers_restart(history, partitions, turn_s, json)
        return
    if not json:
        console.print(f"opening {games} clocked games (turn_s {turn_s}) ...")
    figures = run(games, acting, turn_s, window_s, seed)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(title=f"timers: {games} games on a {turn_s:g} s clock, {window_s:g} s measured")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("games whose seats act (slowly)", f"{figures.acting_games:,}")
    table.add_row("timeouts in the window", f"{figures.timeouts:,}")
    table.add_row("timeouts/s", f"{figures.timeouts_per_s:,.1f}")
    table.add_row("moves the slow seats made themselves", f"{figures.own_moves:,}")
    table.add_row("timer worker CPU", f"{figures.timer_cpu_s:.2f} s")
    table.add_row("timer worker CPU per timeout", f"{figures.timer_cpu_per_timeout_us:,.0f} us")
    table.add_row("timer worker memory (RSS)", f"{figures.timer_rss_mb:.0f} MB")
    table.add_row("sent by the worker, past the deadline, p50", f"{figures.fired_p50_ms:.1f} ms")
    table.add_row("sent by the worker, past the deadline, p99", f"{figures.fired_p99_ms:.1f} ms")
    table.add_row(
        "decided by the engine, past the deadline, p50", f"{figures.lateness_p50_ms:.1f} ms"
    )
    table.add_row(
        "decided by the engine, past the deadline, p99", f"{figures.lateness_p99_ms:.1f} ms"
    )
    table.add_row(
        "decided by the engine, past the deadline, max", f"{figures.lateness_max_ms:.1f} ms"
    )
    table.add_row("peer: engine CPU per timeout", f"{figures.engine_cpu_per_timeout_us:,.0f} us")
    Console().print(table)
    typer.echo(f"ratio (timer CPU / engine CPU, per timeout): {figures.ratio:.3f}")


def timers_restart(history: int, partitions: int, turn_s: float, json: bool) -> None:
    """``spades bench timers --history N``."""
    from benchmarks.timers import run_restart

    if not json:
        console.print(f"filling the stream with {history:,} finished games ...")
    figures = run_restart(history, partitions, turn_s)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(title=f"timers restart: {history:,} finished games, {partitions} partition(s)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("messages in the history", f"{figures.history_messages:,}")
    table.add_row("filling the stream", f"{figures.fill_s:.1f} s")
    table.add_row("first start, no checkpoint (a survey)", f"{figures.first_start_s:.2f} s")
    table.add_row("kill -9 -> the new worker holds the partition", f"{figures.claimed_s:.2f} s")
    table.add_row("kill -9 -> the table moves again", f"{figures.moved_s:.2f} s")
    table.add_row("the new holder's own part (resume, fire)", f"{figures.restart_s:.2f} s")
    Console().print(table)


@app.command("history")
def history(
    games: Annotated[
        str, typer.Option(help="Sizes: finished games in the history, comma-separated.")
    ] = "0,10000,100000",
    count: Annotated[int, typer.Option("--partitions", "-k", min=1, help="K, the partitions.")] = 1,
    turn_s: Annotated[float, typer.Option(min=0.1, help="The table's clock, a turn.")] = 1.0,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """For each size, a fresh stack filled with that many finished games (appended without the
    engine, a sample audited), read once by every follower, then restarted: each process's
    start-up time and RSS, the timer worker's start to a 1 s table's first timeout, stream and
    database bytes per game, and a killed timer worker's table moving again; the slope of each
    against N, per 10,000 games (near zero: a restart reads what runs, not what ended)."""
    from benchmarks.history import run

    sizes = [int(size) for size in games.split(",") if size.strip()]
    figures = run(sizes, count, turn_s, progress=None if json else console.print)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(title=f"history: {count} partition(s), a table on a {turn_s:g} s clock")
    table.add_column("measure")
    for size in figures.sizes:
        table.add_column(f"{size.games:,} games", justify="right")
    table.add_column("per 10k games", justify="right")
    for name, values in figures.figures.items():
        per = figures.per_10k[name]
        table.add_row(
            name, *(_figure(value) for value in values), "-" if per is None else f"{per:+,.2f}"
        )
    table.add_row("load average at the end", *(f"{s.load[0]:.1f}" for s in figures.sizes), "")
    Console().print(table)
    for size in figures.sizes:
        for problem in size.problems:
            typer.echo(f"{size.games:,} games: {problem}")
        typer.echo(
            f"{size.games:,} games: {size.audited} histories audited, "
            + (f"{len(size.problems)} problems" if size.problems else "all clean")
        )


def _figure(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:,.2f}"


@app.command("http")
def http(
    games: Annotated[int, typer.Option(min=1, help="Games played at once.")] = 16,
    seconds: Annotated[float, typer.Option(min=1, help="Measured window, per side.")] = 20.0,
    warmup: Annotated[float, typer.Option(min=0, help="Seconds before the window.")] = 3.0,
    preset: Annotated[str, typer.Option(help="Rules preset.")] = "partnership",
    profile: Annotated[
        Path | None,
        typer.Option(help="Record each process with py-spy into this directory."),
    ] = None,
    low_rate: Annotated[
        float,
        typer.Option(min=0, help="Actions/s of a second, quiet window on the service (0: none)."),
    ] = 50.0,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """The HTTP action path (a seat's view, then one of its legal actions) on the whole
    `make run` stack, against a bare FastAPI app that appends each action to JetStream;
    the same lean client drives both. Then the service alone at a low, steady rate: the
    projection workers' CPU per event at both loads."""
    from benchmarks.http import ms_per_event, run

    figures = run(games, seconds, warmup, preset, profile=profile, low_rate=low_rate or None)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(title=f"http: {games} {preset} games at once, {seconds:.0f} s per side")
    table.add_column("measure")
    sides = [figures.service, figures.peer]
    if figures.quiet is not None:
        sides.append(figures.quiet)
    for side in sides:
        title = side.name if side.rate is None else f"{side.name} at {side.rate:g}/s"
        table.add_column(title, justify="right")
    rows: list[tuple[str, Callable[[SideFigures], str]]] = [
        ("actions/s", lambda s: f"{s.actions_per_s:,.1f}"),
        ("requests per action", lambda s: f"{s.requests_per_action:.2f}"),
        ("request latency p50 / p99", lambda s: f"{s.p50_ms:.1f} / {s.p99_ms:.1f} ms"),
        ("action latency p50 / p99", lambda s: f"{s.action_p50_ms:.1f} / {s.action_p99_ms:.1f} ms"),
        ("errors", lambda s: str(s.errors)),
        (
            "projection lag p50 / p99",
            lambda s: "-" if s.lag_p99_ms is None else f"{s.lag_p50_ms} / {s.lag_p99_ms} ms",
        ),
    ]
    for label, cell in rows:
        table.add_row(label, *(cell(side) for side in sides))
    Console().print(table)
    cpu = Table(title="CPU in the window (cores busy; ms per action)")
    cpu.add_column("side")
    cpu.add_column("process")
    cpu.add_column("cores", justify="right")
    cpu.add_column("ms/action", justify="right")
    for side in sides:
        name = side.name if side.rate is None else f"{side.name} at {side.rate:g}/s"
        for process in side.processes:
            cpu.add_row(name, process.name, f"{process.cores:.2f}", f"{process.ms_per_action:.2f}")
    Console().print(cpu)
    for side in sides:
        per_event = ms_per_event(side, "projections")
        if per_event is not None and side.events:
            load = "full load" if side.rate is None else f"{side.rate:g} actions/s"
            typer.echo(
                f"projections CPU per event at {load}: {per_event:.3f} ms "
                f"({side.events} events, {side.events / side.seconds:.0f}/s)"
            )
    for side in (figures.service, figures.peer):
        for name, lines in side.hot.items():
            typer.echo(f"\n{side.name} / {name}: where the samples are")
            for line in lines:
                typer.echo("  " + line)
        for sample in side.error_samples:
            typer.echo(f"{side.name} error: {sample}")
    typer.echo(f"load average before {figures.load_before}, after {figures.load_after}")
    typer.echo(f"ratio (service / bare app actions/s): {figures.ratio:.2f}")


@app.command("memory")
def memory(
    games: Annotated[int, typer.Option(min=1, help="Games created and read.")] = 10_000,
    width: Annotated[int, typer.Option(min=1, help="Requests at once.")] = 32,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """The engine's and the gateway's RSS once every process of `make run` has met this many
    games, against their own RSS holding none."""
    from benchmarks.memory import run

    figures = run(games, width)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(title=f"memory: {figures.games:,} games, caches of {figures.cache_capacity:,}")
    table.add_column("process")
    table.add_column("RSS ready (no game)", justify="right")
    table.add_column(f"RSS with {figures.games:,} games", justify="right")
    table.add_column("per cached game", justify="right")
    for name, ready in figures.rss_ready_mb.items():
        table.add_row(
            name,
            f"{ready:.1f} MB",
            f"{figures.rss_mb[name]:.1f} MB",
            f"{figures.kb_per_cached_game[name]:.1f} kB",
        )
    Console().print(table)
    typer.echo(f"created and read in {figures.seconds:.0f} s; load average {figures.load}")


@app.command("integrity")
def integrity(
    players: Annotated[int, typer.Option(min=3, help="Players a league (a multiple of 3).")] = 6,
    seeds: Annotated[int, typer.Option(min=1, help="Colluding leagues per strength.")] = 4,
    honest: Annotated[int, typer.Option(min=0, help="Honest leagues.")] = 8,
    strength: Annotated[
        list[float] | None, typer.Option(help="Share of hands the pair colludes (repeatable).")
    ] = None,
    fdr: Annotated[float, typer.Option(help="False discovery rate a signal flags at.")] = 0.01,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """Planted colluders in bot leagues of cutthroat: the share of colluding pairs the
    integrity signals flag, and of honest pairs, at each number of hands per player."""
    from benchmarks.integrity import STRENGTHS, run

    if players % 3:
        raise typer.BadParameter("a league seats players three to a table", param_hint="--players")
    figures = run(
        players, seeds, strength or STRENGTHS, honest, fdr, None if json else console.print
    )
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(title=f"integrity: leagues of {players} bots, flagged at FDR {fdr:g}")
    for column in ("league", "hands", "colluders flagged", "honest flagged", "by", "honest by"):
        table.add_column(
            column, justify="left" if "by" in column or column == "league" else "right"
        )
    for row in figures:
        kind = "honest" if row.strength is None else f"colluding {row.strength:.0%}"
        caught = "-" if row.strength is None else f"{row.colluding_flagged}/{row.leagues}"
        share = row.honest_flagged / row.honest_pairs if row.honest_pairs else 0.0
        table.add_row(
            kind,
            str(row.hands_each),
            caught,
            f"{row.honest_flagged}/{row.honest_pairs} ({share:.1%})",
            _counts(row.signals),
            _counts(row.honest_signals),
        )
    Console(width=160).print(table)
    typer.echo("colluding N%: the pair plays as partners on N% of its hands; by: flags per signal")


@app.command("events")
def events(
    pairs: Annotated[int, typer.Option(min=2, max=32, help="Partnerships in an event.")] = 8,
    rounds: Annotated[int, typer.Option(min=1, help="Rounds of an event.")] = 7,
    deals: Annotated[
        list[int] | None, typer.Option(min=1, help="Deals a table plays a round (repeatable).")
    ] = None,
    count: Annotated[int, typer.Option("--events", min=2, help="Events of each format.")] = 30,
    seed: Annotated[int, typer.Option(help="Seed of the first event.")] = 1,
    json: Annotated[bool, typer.Option("--json", help="One JSON line per --deals.")] = False,
) -> None:
    """Pairs of known strength play Swiss on fresh deals and duplicate on the same number of
    deals: Kendall's tau between their strength order and each event's standings."""
    from benchmarks.events import run

    for per_round in deals or [1, 2]:
        figures = run(pairs, rounds, per_round, count, seed)
        if json:
            typer.echo(msgspec.json.encode(figures).decode())
            continue
        table = Table(
            title=f"events: {pairs} pairs, {rounds} rounds of {per_round} deal(s), "
            f"{count} events each"
        )
        for column in ("format", "deals each", "tau mean", "tau sd", "min", "max", "best first"):
            table.add_column(column, justify="left" if column == "format" else "right")
        for row in figures.formats:
            table.add_row(
                row.format,
                str(row.deals_each),
                f"{row.tau_mean:+.3f}",
                f"{row.tau_stdev:.3f}",
                f"{row.tau_min:+.2f}",
                f"{row.tau_max:+.2f}",
                f"{row.top_pair_first}/{row.events}",
            )
        Console(width=160).print(table)
        gain, error = figures.gain()
        typer.echo(
            f"duplicate - swiss: tau {gain:+.3f} (standard error {error:.3f}); "
            f"errors on card play by pair: {', '.join(f'{e:.0%}' for e in figures.errors)}"
        )


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))
