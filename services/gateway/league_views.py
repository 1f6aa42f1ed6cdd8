"""What leaves the gateway about a league, as the structs of :mod:`contracts.leagues`: the
league, a round with its games' progress, the standings ranked, the integrity report, and the
exports of standings and results (JSON or CSV).

The standings read model holds the players who have played; the league's roster (from its
stream) adds the others at the starting rating, the byes each had, and who has withdrawn.

**Ranking and tie-breaks** (docs/leagues.md): most wins, then most points, then fewest
forfeits, then the higher rating ``ordinal``, then the player's name.

- A game's win goes to every unit the game names a winner. A game that ended by forfeit (a
  seat's ``forfeit`` clock ran out) is a loss for the unit that ran out of time, counted in its
  players' ``forfeits``, and a win for every other unit; points are the scores as they stood.
- A bye (a round without a table, when the players do not divide into tables) counts
  :data:`~domain.league.BYE_WINS` win, no points, no game and no rating change, from the
  moment its round is scheduled (the player has nothing left to play in it). A withdrawn
  player gets no byes: they are not in the rounds after they left.
- A substitute plays for the seat's original player: the game counts in the original player's
  record, never the substitute's.
- The director's adjusted scores are added to the points (``adjusted`` says how much of them),
  and a voided table counts in no one's wins, points, games or forfeits: the read model counted
  its game when it ended, and the answer takes the result the league recorded with the void
  back out. Its rating cannot be taken back out, so such a league's ratings (and a duplicate
  event's, which must not move before every table has played the round) are rated again from
  the league's history (:func:`shown_ratings`). Both are listed, with their reasons, in the
  standings and (``voided``) in the results.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import msgspec

from contracts import leagues as shown
from contracts.answers import GameSummary
from domain import matchpoints
from domain.duplicate_standings import duplicate_results, duplicate_scores
from domain.league import BYE_WINS, League, TableVoided, champion, knockout_rounds, ranking
from domain.records import HandRecord
from domain.table import table_for
from services.gateway.projection_queries import LeagueStandings, PlayerRecord
from services.integrity.signals import FDR, HandFacts, report
from services.store.ratings import MODEL, RatedGame, Rating, Standing, rate_in_order

STANDINGS_CSV = (
    "rank",
    "player",
    "wins",
    "points",
    "games",
    "byes",
    "forfeits",
    "withdrawn",
    "adjusted",
    "mu",
    "sigma",
    "ordinal",
)
DUPLICATE_STANDINGS_CSV = (*STANDINGS_CSV, "boards", "matchpoints", "percentage")
"""A duplicate league's standings ranked by ``percentage``, which its CSV shows too."""
RESULTS_CSV = (
    "round",
    "table",
    "game_id",
    "seat",
    "player",
    "played_by",
    "points",
    "result",
    "voided",
)
"""One row per seat of every finished round's tables (``result``: ``win``, ``loss`` or
``forfeit``), and one per bye (``result``: ``bye``, no table)."""


def league_answer(league: League) -> shown.League:
    return shown.League(
        league_id=league.league_id,
        name=league.name,
        version=league.version,
        rules=league.rules,
        players=list(league.players),
        rounds=league.planned,
        pairing=league.pairing,
        rounds_scheduled=len(league.rounds),
        next_round=None if league.over else league.next_round,
        rounds_finished=sum(played.finished for played in league.rounds),
        finished=league.finished,
        clock=league.clock,
        withdrawn=list(league.withdrawn),
        substitutions=[
            shown.Substitution(
                round=s.round,
                game_id=s.game_id,
                seat=s.seat,
                player=s.player,
                substitute=s.substitute,
            )
            for s in league.substitutions
        ],
        format=league.format,
        boards_per_round=league.boards_per_round,
        partners=league.partners,
        convention=league.convention,
        boards=(
            shown.PublishedBoards(
                root=league.boards.root, commitments=list(league.boards.commitments)
            )
            if league.boards is not None
            else None
        ),
        revealed=[shown.RevealedBoard(board=board, seed=seed) for board, seed in league.revealed],
        knockout=bracket_answer(league),
    )


def bracket_answer(league: League) -> shown.Bracket | None:
    """The league's knockout: its entrants once seeded, and each round as far as it is known."""
    stage = league.stage
    if stage is None:
        return None
    knockout = league.knockout
    entrants = knockout.entrants if knockout is not None else ()
    rounds = []
    for index, matches in enumerate(knockout_rounds(league)):
        assert knockout is not None
        rounds.append(
            shown.BracketRound(
                round=knockout.first + index,
                matches=[
                    shown.BracketMatch(
                        match=played.match.number,
                        seeds=list(played.match.seeds),
                        sides=[list(entrants[seed - 1]) for seed in played.match.seeds],
                        game_id=played.game_id,
                        winner=None if played.winner is None else list(entrants[played.winner - 1]),
                    )
                    for played in matches
                ],
            )
        )
    return shown.Bracket(
        after_round=league.before_knockout,
        top=stage.top,
        deals=stage.deals,
        target=stage.target,
        seeding="ratings" if stage.ratings is not None else "standings",
        tie_break=stage.tie_break,
        extra_deals=stage.extra_deals,
        entrants=[list(side) for side in entrants],
        rounds=rounds,
        champion=None if (won := champion(league)) is None else list(won),
    )


def round_answer(league: League, number: int, games: dict[str, GameSummary]) -> shown.LeagueRound:
    """Round ``number`` (which must exist): its tables, each with its game's status and scores
    as the game list has them, and who plays each seat now."""
    played = league.rounds[number - 1]
    # a duplicate round's scores say how the boards went at each table: none until every
    # table has played them
    hidden = league.format == "duplicate" and not played.finished
    tables = []
    for index, table in enumerate(played.tables, start=1):
        summary = games.get(table.game_id)
        shown_summary = None if hidden else summary
        tables.append(
            shown.RoundTable(
                table=index,
                game_id=table.game_id,
                players=list(table.players),
                status=summary.status if summary else None,
                scores=shown_summary.scores if shown_summary else None,
                winners=shown_summary.winners if shown_summary else None,
                sitting=[league.sitting(table, seat) for seat in range(len(table.players))],
            )
        )
    return shown.LeagueRound(
        league_id=league.league_id,
        round=number,
        pairing=league.pairing,
        tables=tables,
        byes=list(played.byes),
        finished=played.finished,
        boards=list(played.boards),
    )


def standings_answer(
    league: League,
    standings: LeagueStandings,
    hands: Mapping[str, Sequence[HandRecord]] | None = None,
    ratings: Mapping[str, Rating] | None = None,
) -> shown.Standings:
    """The standings; a duplicate league's ranked by matchpoints from its tables' ``hands``.
    ``ratings``, when given, are shown rather than the read model's (:func:`shown_ratings`)."""
    if ratings is not None:
        standings = _rated_anew(standings, ratings)
    answer = _standings_answer(league, standings)
    if league.format != "duplicate":
        return answer
    scored = duplicate_scores(league, hands or {})
    recorded = {standing.player: standing for standing in ranking(league)}
    rows = []
    for row in answer.players:
        mine = scored.get(row.player)
        record = recorded[row.player]
        rows.append(
            msgspec.structs.replace(
                row,
                # the rounds every table has finished, as the league recorded them: a table's
                # score says how the round's boards went while the others play them
                wins=record.wins,
                points=record.points,
                games=record.games,
                byes=record.byes,
                forfeits=record.forfeits,
                boards=mine.boards if mine else 0,
                **_matchpoints(mine, row.adjusted),
            )
        )
    rows.sort(key=lambda r: (-(r.percentage or 0.0), -(r.matchpoints or 0.0), r.player))
    ranked = [msgspec.structs.replace(row, rank=rank) for rank, row in enumerate(rows, start=1)]
    return msgspec.structs.replace(answer, players=ranked)


def rated_again(league: League) -> bool:
    """Whether the standings' ratings must be rated again from the league's history rather
    than read from the read model, which rates each game as it ends: a duplicate event's (a
    table's result says how the round's boards went while other tables still play them), and
    a league's whose director voided a whole table (its game rated out)."""
    return league.format == "duplicate" or any(void.board is None for void in league.voided)


def shown_ratings(league: League, ended: Mapping[str, GameSummary]) -> dict[str, Rating]:
    """The ratings a league whose ratings are :func:`rated_again` shows: its tables' games
    rated in the league's order (round, then table), as the read model rates them, with every
    voided table left out; a duplicate event's of the rounds every table has finished, any
    other's with the games of the round under way that have ``ended`` (the game list's
    summaries)."""
    return rate_in_order(_rated_tables(league, {} if league.format == "duplicate" else ended))


def _rated_tables(league: League, ended: Mapping[str, GameSummary]) -> Iterator[RatedGame]:
    for played in league.rounds:
        units = table_for(league.rules_of_round(played.number)).units
        results = {result.game_id: result for result in played.results}
        for table in played.tables:
            if league.voided_game(table.game_id):
                continue
            players = [[league.sitting(table, seat) for seat in unit] for unit in units]
            result = results.get(table.game_id)
            if result is not None:
                scores = [result.points[unit[0]] for unit in units]
                winners = [n for n, unit in enumerate(units) if result.won[unit[0]]]
                yield players, scores, winners
            elif (summary := ended.get(table.game_id)) and summary.status == "finished":
                yield players, summary.scores, summary.winners


def _rated_anew(standings: LeagueStandings, ratings: Mapping[str, Rating]) -> LeagueStandings:
    """The read model's records with ``ratings`` in place of its own (a player none of whose
    games is rated has the starting rating)."""
    start = (MODEL.mu, MODEL.sigma)
    records = []
    for record in standings.players:
        mu, sigma = ratings.get(record.player, start)
        ordinal = MODEL.rating(mu, sigma).ordinal()
        records.append(msgspec.structs.replace(record, mu=mu, sigma=sigma, ordinal=ordinal))
    return msgspec.structs.replace(standings, players=records)


def _matchpoints(mine: matchpoints.Standing | None, adjusted: int) -> dict[str, float | None]:
    """A side's matchpoints and percentage, with the director's adjustments (in matchpoints)."""
    if mine is None:
        return {"matchpoints": float(adjusted), "percentage": None}
    points = mine.matchpoints + adjusted
    return {
        "matchpoints": float(points),
        "percentage": float(100 * points / mine.top) if mine.top else None,
    }


def boards_answer(league: League, hands: Mapping[str, Sequence[HandRecord]]) -> shown.LeagueBoards:
    """``GET /v1/leagues/{id}/boards``: each board of the rounds every table has finished,
    across every table that played it (no card: the sides' points, deltas and matchpoints)."""
    results = duplicate_results(league, hands)
    crosses = matchpoints.cross_tables(results) if results is not None else ()
    round_of = {board: played.number for played in league.rounds for board in played.boards}
    hand_of = {
        board: hand for played in league.rounds for hand, board in enumerate(played.boards, 1)
    }
    seed_of = dict(league.revealed)
    return shown.LeagueBoards(
        league_id=league.league_id,
        boards=[
            shown.BoardAcross(
                board=cross.board,
                round=round_of[cross.board],
                seed=seed_of.get(cross.board),
                played=cross.played,
                results=[
                    shown.BoardResult(
                        game_id=row.table,
                        hand=hand_of[cross.board],
                        direction=row.direction,
                        players=list(row.players),
                        points=row.value,
                        delta=row.delta,
                        matchpoints=float(row.matchpoints),
                        top=row.top,
                    )
                    for row in cross.rows
                ],
            )
            for cross in crosses
        ],
    )


def _standings_answer(league: League, standings: LeagueStandings) -> shown.Standings:
    played = {record.player: record for record in standings.players}
    adjusted = dict.fromkeys(league.players, 0)
    for adjustment in league.adjustments:
        adjusted[adjustment.player] += adjustment.points
    played = _without_voided(league, played, standings.counted)
    byes = dict.fromkeys(league.players, 0)
    for past in league.rounds:
        for player in past.byes:
            byes[player] += 1
    withdrawn = set(league.withdrawn)
    records = [played.get(player) or _not_played(player) for player in league.players]

    def wins(record: PlayerRecord) -> int:
        return record.wins + BYE_WINS * byes[record.player]

    def points(record: PlayerRecord) -> int:
        return record.points + adjusted[record.player]

    records.sort(key=lambda r: (-wins(r), -points(r), r.forfeits, -r.ordinal, r.player))
    return shown.Standings(
        league_id=league.league_id,
        version=standings.version,
        players=[
            shown.PlayerStanding(
                rank=rank,
                player=record.player,
                points=points(record),
                wins=wins(record),
                games=record.games,
                byes=byes[record.player],
                forfeits=record.forfeits,
                withdrawn=record.player in withdrawn,
                adjusted=adjusted[record.player],
                rating=shown.Rating(mu=record.mu, sigma=record.sigma, ordinal=record.ordinal),
            )
            for rank, record in enumerate(records, start=1)
        ],
        adjustments=[
            shown.Adjustment(
                number=a.number, player=a.player, points=a.points, reason=a.reason, round=a.round
            )
            for a in league.adjustments
        ],
        voided=voided_tables(league),
    )


def voided_tables(league: League) -> list[shown.VoidedTable]:
    """The tables the director voided, in the order voided."""
    return [voided_table(league, void) for void in league.voided]


def voided_table(league: League, void: TableVoided) -> shown.VoidedTable:
    """A void of one of ``league``'s tables, the table numbered in its round."""
    found = league.table_named(void.game_id)
    assert found is not None  # the league voids only a table of its own
    played, table = found
    return shown.VoidedTable(
        round=void.round,
        table=played.tables.index(table) + 1,
        game_id=void.game_id,
        reason=void.reason,
        board=void.board,
    )


def _without_voided(
    league: League, played: dict[str, PlayerRecord], counted: frozenset[str]
) -> dict[str, PlayerRecord]:
    """The read model's records with each voided table's result taken back out (of those the
    model has counted: ``counted``)."""
    records = dict(played)
    for void in league.voided:
        if void.game_id not in counted or void.board is not None:
            continue  # not counted yet; or one board of a duplicate table (matchpoints only)
        found = league.table_named(void.game_id)
        assert found is not None
        _, table = found
        result = void.result
        for seat, player in enumerate(table.players):
            record = records.get(player)
            assert record is not None  # the model counted the game, so the player
            records[player] = msgspec.structs.replace(
                record,
                points=record.points - result.points[seat],
                wins=record.wins - result.won[seat],
                games=record.games - 1,
                forfeits=record.forfeits - result.forfeit_at(seat),
            )
    return records


def standings_rows(standings: shown.Standings) -> list[dict[str, Any]]:
    """The standings one flat row per player, its rating's figures beside the rest."""
    rows = []
    for player in standings.players:
        row = msgspec.structs.asdict(player)
        row.update(msgspec.structs.asdict(row.pop("rating")))
        rows.append(row)
    return rows


def results_rows(league: League) -> list[shown.ResultRow]:
    """Every seat's result in the league's finished rounds, as the league recorded them, and
    every bye; in round, then table, then seat order."""
    rows: list[shown.ResultRow] = []
    for played in league.rounds:
        if not played.finished:
            continue
        for number, (table, result) in enumerate(
            zip(played.tables, played.results, strict=True), start=1
        ):
            for seat, player in enumerate(table.players):
                outcome: shown.SeatResult = (
                    "forfeit" if result.forfeit_at(seat) else "win" if result.won[seat] else "loss"
                )
                rows.append(
                    shown.ResultRow(
                        round=played.number,
                        table=number,
                        game_id=table.game_id,
                        seat=seat,
                        player=player,
                        played_by=league.sitting(table, seat),
                        points=result.points[seat],
                        result=outcome,
                        voided=league.voided_game(table.game_id),
                    )
                )
        rows += [
            shown.ResultRow(
                round=played.number,
                table=None,
                game_id=None,
                seat=None,
                player=player,
                played_by=None,
                points=0,
                result="bye",
                voided=False,
            )
            for player in played.byes
        ]
    return rows


def results_cells(rows: Iterable[shown.ResultRow]) -> list[dict[str, Any]]:
    """The results as :func:`to_csv` takes rows."""
    return [msgspec.structs.asdict(row) for row in rows]


def to_csv(columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> str:
    """RFC 4180 CSV with a header line; an empty cell for None, ``true``/``false`` for a bool.
    A cell a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@`` first) is quoted
    after a ``'``, so a player's name cannot become one."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in columns])
    return out.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if isinstance(value, str) and text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + text
    return text


def _not_played(player: str) -> PlayerRecord:
    start = Standing()
    return PlayerRecord(
        player=player,
        points=0,
        wins=0,
        games=0,
        mu=start.mu,
        sigma=start.sigma,
        ordinal=start.ordinal,
    )


def integrity_answer(league_id: str, facts: Sequence[HandFacts]) -> shown.IntegrityReport:
    """``GET /v1/leagues/{id}/integrity``: every pair's signals over the league's finished
    hands, flagged ones first, then by adjusted p-value. A flagged signal names its hands by
    game and number, with their replay pages: where to look, never a card."""
    signals = sorted(report(facts), key=lambda s: (not s.flagged, s.q_value, s.p_value))
    return shown.IntegrityReport(
        league_id=league_id,
        hands=len(facts),
        fdr=FDR,
        signals=[
            shown.IntegritySignal(
                signal=signal.signal,
                players=list(signal.players),
                observed=signal.observed,
                expected=signal.expected,
                effect=signal.effect,
                count=signal.count,
                p_value=signal.p_value,
                q_value=signal.q_value,
                flagged=signal.flagged,
                evidence=[
                    shown.EvidenceHand(
                        game_id=where.game_id,
                        hand=where.hand,
                        replay=f"/replay/{where.game_id}?hand={where.hand}",
                    )
                    for where in signal.evidence
                ],
            )
            for signal in signals
        ],
    )
