"""What the API answers about leagues, as the structs the gateway encodes and the Python client
decodes: a league, a round started and a round read, a withdrawal and a substitution, the
standings, the results export and the integrity report.

The league itself is the domain's (:class:`domain.league.League`); these are the shapes the
service shows of it. A field added after the first release has a default, so that this client
still reads an earlier server's answers (the document marks every answer's field required all
the same: this server always sends it). ``contracts/openapi.json`` takes their JSON Schemas
from here (:mod:`services.gateway.openapi`), so the document, the server and the client cannot
drift.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from contracts.answers import SeatTaken
from domain.clock import Clock
from domain.league import MatchTies
from domain.rules import Rules
from domain.schedule import Pairing
from domain.state import Status

Signal = Literal[
    "sets",
    "free_sets_declined",
    "bags_fed",
    "nils_covered",
    "shared_table_lift",
    "co_seating",
    "decision_times",
]
"""The integrity signals a pair of players is tested on (README, "Integrity signals")."""
SeatResult = Literal["win", "loss", "forfeit", "bye"]


class Substitution(msgspec.Struct, frozen=True, kw_only=True):
    """``substitute`` plays ``player``'s seat from then on, for ``player``'s record."""

    round: int
    game_id: str
    seat: int
    player: str
    substitute: str


class League(msgspec.Struct, frozen=True, kw_only=True):
    """A league: its rules, players, pairing, and how far its rounds have gone."""

    league_id: str
    name: str
    version: Annotated[int, msgspec.Meta(description="How many events made the league.")]
    rules: Rules
    players: list[str]
    rounds: Annotated[int | None, msgspec.Meta(description="Rounds the league has; null: no end.")]
    pairing: Pairing
    rounds_scheduled: int
    next_round: Annotated[
        int | None, msgspec.Meta(description="The round to schedule next; null: none left.")
    ]
    rounds_finished: Annotated[int, msgspec.Meta(description="Rounds whose every game is over.")]
    finished: Annotated[
        bool,
        msgspec.Meta(description="Its last planned round is over (a league of no end never)."),
    ]
    clock: Annotated[Clock | None, msgspec.Meta(description="The clock of every table it starts.")]
    withdrawn: Annotated[
        list[str], msgspec.Meta(description="Players who left; no later round seats them.")
    ]
    substitutions: Annotated[
        list[Substitution], msgspec.Meta(description="Substitutes seated, oldest first.")
    ]
    knockout: Annotated[
        Bracket | None,
        msgspec.Meta(description="The knockout the league ends with; null: none."),
    ] = None

    format: Annotated[
        Literal["standard", "duplicate"],
        msgspec.Meta(
            description="`duplicate`: every table of a round plays the round's boards "
            "(docs/leagues.md, Duplicate events)."
        ),
    ] = "standard"
    boards_per_round: Annotated[
        int | None, msgspec.Meta(description="A duplicate league's boards a round; else null.")
    ] = None
    boards: Annotated[
        PublishedBoards | None,
        msgspec.Meta(description="A duplicate league's boards as published when it was created."),
    ] = None
    partners: Annotated[
        Literal["fixed", "rotating"],
        msgspec.Meta(description="A duplicate league's partners: fixed pairs, or rotating."),
    ] = "fixed"
    convention: Annotated[
        Literal["as_scored", "transferred"],
        msgspec.Meta(description="A duplicate league's sets and bags convention."),
    ] = "as_scored"
    revealed: Annotated[
        list[RevealedBoard],
        msgspec.Meta(description="A duplicate league's boards revealed so far, board order."),
    ] = []


class BracketMatch(msgspec.Struct, frozen=True, kw_only=True):
    """A match of the knockout: its entrants (best seed first), its game, its winner. An
    entrant is a side: one player of the two-player game, or a duplicate event's pair."""

    match: Annotated[int, msgspec.Meta(description="Its place in the round, from 1.")]
    seeds: list[int]
    sides: Annotated[list[list[str]], msgspec.Meta(description="Each entrant's players.")]
    game_id: Annotated[
        str | None, msgspec.Meta(description="Its game; null: a bye, or not started yet.")
    ]
    winner: Annotated[
        list[str] | None, msgspec.Meta(description="The side that goes on; null: not decided.")
    ]


class BracketRound(msgspec.Struct, frozen=True, kw_only=True):
    round: Annotated[int, msgspec.Meta(description="The league's round it is played as.")]
    matches: list[BracketMatch]


class Bracket(msgspec.Struct, frozen=True, kw_only=True):
    """A knockout: after ``after_round`` rounds, the first ``top`` (by the standings, or the
    organiser's ratings) meet head to head, two at a table, byes to the best seeds, each round's
    winners paired in the next; a match is ``deals`` hands or to ``target``, a tie on top at
    its end decided by ``tie_break``."""

    after_round: int
    top: int | None
    deals: int | None
    target: int | None
    seeding: Literal["standings", "ratings"]
    tie_break: Annotated[
        MatchTies,
        msgspec.Meta(
            description="A match tied on top at its end: `play_on` a hand at a time until one "
            "side leads alone; `extra_deal` so for up to `extra_deals` hands, then the better "
            "seed wins; `higher_seed` the better seed wins at once."
        ),
    ] = "play_on"
    extra_deals: int = 3
    entrants: Annotated[
        list[list[str]],
        msgspec.Meta(description="Each entrant's players, best seed first, once seeded."),
    ]
    rounds: list[BracketRound]
    champion: list[str] | None


class PublishedBoards(msgspec.Struct, frozen=True, kw_only=True):
    """A duplicate league's boards, committed to before any was dealt: each board's
    ``sha256(seed)`` (the commitment of its ``hand_dealt`` at every table) and their Merkle
    root (RFC 6962 hashing)."""

    root: str
    commitments: Annotated[list[str], msgspec.Meta(description="Board 1 first.")]


class RevealedBoard(msgspec.Struct, frozen=True, kw_only=True):
    """A board's seed, revealed when every table of its round is over."""

    board: int
    seed: Annotated[str, msgspec.Meta(description="Hex; its SHA-256 is the board's commitment.")]


class BoardResult(msgspec.Struct, frozen=True, kw_only=True):
    """One table's side on a board: its points, its score delta (its points less the best of
    the other sides'), and its matchpoints against the same direction at the other tables."""

    game_id: str
    hand: Annotated[int, msgspec.Meta(description="The board's hand in the table's game.")]
    direction: Annotated[int, msgspec.Meta(description="The side's unit at the table, from 0.")]
    players: list[str]
    points: int
    delta: int
    matchpoints: Annotated[
        float, msgspec.Meta(description="1 a result beaten, 1/2 a tie; Neuberg-scaled.")
    ]
    top: Annotated[int, msgspec.Meta(description="The most matchpoints a side can have here.")]


class BoardAcross(msgspec.Struct, frozen=True, kw_only=True):
    """A duplicate board across every table that played it."""

    board: int
    round: int
    seed: Annotated[
        str | None,
        msgspec.Meta(description="Its revealed seed (hex); its SHA-256 is the board's commitment."),
    ]
    played: Annotated[int, msgspec.Meta(description="Tables that played it (not voided).")]
    results: list[BoardResult]


class LeagueBoards(msgspec.Struct, frozen=True, kw_only=True):
    """A duplicate league's boards of the rounds every table has finished, each across its
    tables: the event's cross-table."""

    league_id: str
    boards: list[BoardAcross]


class Withdrawn(msgspec.Struct, frozen=True, kw_only=True):
    """A player withdrawn: later rounds skip them."""

    league_id: str
    player: str
    after_round: Annotated[
        int,
        msgspec.Meta(description="Rounds scheduled when they left; later ones skip them."),
    ]
    running_game: Annotated[
        str | None,
        msgspec.Meta(
            description="Their table's game still being played, which their seat's clock "
            "plays out; null: none."
        ),
    ]


class Substituted(msgspec.Struct, frozen=True, kw_only=True):
    """The substitution, and the seat's new token (every earlier one is revoked)."""

    league_id: str
    round: int
    game_id: str
    seat: int
    player: Annotated[str, msgspec.Meta(description="Whose record the seat's game counts for.")]
    substitute: str
    token: str
    expires_at: str


class StartedTable(msgspec.Struct, frozen=True, kw_only=True):
    """A table of a round just started: its game, and every seat with its token."""

    table: int
    game_id: str
    seats: Annotated[
        list[SeatTaken], msgspec.Meta(description="Every seat, with the token that acts for it.")
    ]


class RoundStarted(msgspec.Struct, frozen=True, kw_only=True):
    """A round scheduled and its games created, every player seated."""

    league_id: str
    round: int
    pairing: Pairing
    tables: list[StartedTable]
    byes: Annotated[list[str], msgspec.Meta(description="The players who sit this round out.")]
    boards: Annotated[
        list[int],
        msgspec.Meta(description="A duplicate league's: the boards every table plays, in order."),
    ] = []


class RoundTable(msgspec.Struct, frozen=True, kw_only=True):
    """A table of a scheduled round, with its game's progress as the game list has it."""

    table: int
    game_id: str
    players: Annotated[list[str], msgspec.Meta(description="The player at each seat.")]
    status: Annotated[
        Status | None, msgspec.Meta(description="As the game list has it; null until it does.")
    ]
    scores: list[int] | None
    winners: list[int] | None
    sitting: Annotated[
        list[str], msgspec.Meta(description="Who plays each seat now (a substitute, if any).")
    ]


class LeagueRound(msgspec.Struct, frozen=True, kw_only=True):
    """A scheduled round: its tables and its byes."""

    league_id: str
    round: int
    pairing: Pairing
    tables: list[RoundTable]
    byes: list[str]
    finished: Annotated[
        bool,
        msgspec.Meta(description="Every game of the round is over, its results recorded."),
    ]
    boards: Annotated[
        list[int],
        msgspec.Meta(description="A duplicate league's: the boards every table plays, in order."),
    ] = []


class Rating(msgspec.Struct, frozen=True, kw_only=True):
    """A player's rating (Plackett-Luce, as openskill makes it)."""

    mu: float
    sigma: float
    ordinal: Annotated[float, msgspec.Meta(description="`mu - 3 sigma`: the rating to rank by.")]


class PlayerStanding(msgspec.Struct, frozen=True, kw_only=True):
    """A player's place in the standings, and the record that gives it."""

    rank: int
    player: str
    points: Annotated[
        int, msgspec.Meta(description="The final scores of the player's unit, summed.")
    ]
    wins: Annotated[
        int,
        msgspec.Meta(
            description="Games the player's unit won (a forfeit is won by every other unit), "
            "plus one per bye."
        ),
    ]
    games: int
    byes: Annotated[
        int, msgspec.Meta(description="Rounds without a table: each counts one win, no points.")
    ]
    forfeits: Annotated[
        int,
        msgspec.Meta(description="Games the player's unit lost on time (`forfeit` clock)."),
    ]
    withdrawn: Annotated[
        bool, msgspec.Meta(description="The player left the league; the record stays.")
    ]
    adjusted: Annotated[
        int,
        msgspec.Meta(
            description="The director's adjusted scores for the player, summed: part of `points`."
        ),
    ] = 0
    rating: Rating
    boards: Annotated[
        int | None,
        msgspec.Meta(description="A duplicate league's: boards the player's side has played."),
    ] = None
    matchpoints: Annotated[
        float | None,
        msgspec.Meta(
            description="A duplicate league's: the side's matchpoints, 1 for each result of "
            "its direction beaten on a board at another table, 1/2 for each tie (Neuberg for "
            "a board played fewer times than the most)."
        ),
    ] = None
    percentage: Annotated[
        float | None,
        msgspec.Meta(
            description="A duplicate league's: matchpoints over tops, in percent (what it is "
            "ranked by); null before anything could be compared."
        ),
    ] = None


class Adjustment(msgspec.Struct, frozen=True, kw_only=True):
    """An adjusted score the director recorded, in the league's history."""

    number: Annotated[int, msgspec.Meta(description="The league's adjustments, from 1.")]
    player: str
    points: Annotated[int, msgspec.Meta(description="Added to the player's points (or taken).")]
    reason: str
    round: Annotated[
        int | None, msgspec.Meta(description="The round it concerns; none: the whole league.")
    ]


class VoidedTable(msgspec.Struct, frozen=True, kw_only=True):
    """A table the director voided: its game's result counts in no player's wins, points,
    games, forfeits or ratings."""

    round: int
    table: Annotated[int, msgspec.Meta(description="The table's number in its round, from 1.")]
    game_id: str
    reason: str
    board: Annotated[
        int | None,
        msgspec.Meta(description="A duplicate event's one board voided there; null: the table."),
    ] = None


class Standings(msgspec.Struct, frozen=True, kw_only=True):
    """Most wins first (a bye counts one), then most points, then fewest forfeits, then the
    higher rating ``ordinal``, then the player's name; a duplicate league's by ``percentage``,
    then ``matchpoints``, then the player's name. The director's adjusted scores are in the
    points, and a voided table counts for no one; both are listed, with their reasons."""

    league_id: str
    version: Annotated[int, msgspec.Meta(description="How many of the league's games are counted.")]
    players: list[PlayerStanding]
    adjustments: list[Adjustment] = []
    voided: list[VoidedTable] = []


class ResultRow(msgspec.Struct, frozen=True, kw_only=True):
    """One seat of a finished round's table, or one bye (no table, no game, no seat)."""

    round: int
    table: Annotated[
        int | None,
        msgspec.Meta(description="The table's number in its round, from 1; none: a bye."),
    ]
    game_id: str | None
    seat: int | None
    player: Annotated[str, msgspec.Meta(description="The league's player who held the seat.")]
    played_by: Annotated[
        str | None, msgspec.Meta(description="Who finished the seat (a substitute, if any).")
    ]
    points: int
    result: SeatResult
    voided: Annotated[
        bool, msgspec.Meta(description="The director voided the table: it counts for no one.")
    ] = False


class LeagueResults(msgspec.Struct, frozen=True, kw_only=True):
    """Every seat's result in the league's finished rounds, and every bye: in round, then
    table, then seat order."""

    league_id: str
    results: list[ResultRow]


# --------------------------------------------------------------------------- integrity


class EvidenceHand(msgspec.Struct, frozen=True, kw_only=True):
    """A hand that carries a flagged signal's evidence: where to look, never what was held."""

    game_id: str
    hand: int
    replay: Annotated[
        str, msgspec.Meta(description="The hand's replay page (``/replay/GAME?hand=N``).")
    ]


class IntegritySignal(msgspec.Struct, frozen=True, kw_only=True):
    """One signal of one pair of players, against the field (README, "Integrity signals")."""

    signal: Signal
    players: Annotated[
        list[str],
        msgspec.Meta(
            min_length=2,
            max_length=2,
            description="The pair; for ``sets``, the setter then the one set.",
        ),
    ]
    observed: Annotated[float, msgspec.Meta(description="The pair's figure, in the signal's unit.")]
    expected: Annotated[
        float, msgspec.Meta(description="The same figure of the field (or the schedule's draw).")
    ]
    effect: Annotated[
        float, msgspec.Meta(description="Observed less expected (a ratio for ``co_seating``).")
    ]
    count: Annotated[
        int, msgspec.Meta(description="The chances, shared hands or games shared behind it.")
    ]
    p_value: Annotated[float, msgspec.Meta(description="One-sided, against the field.")]
    q_value: Annotated[
        float,
        msgspec.Meta(description="The p-value adjusted over every signal (Benjamini-Hochberg)."),
    ]
    flagged: Annotated[
        bool, msgspec.Meta(description="Whether ``q_value`` is at or under the report's ``fdr``.")
    ]
    evidence: Annotated[
        list[EvidenceHand], msgspec.Meta(description="For a flagged signal, its first hands.")
    ]


class IntegrityReport(msgspec.Struct, frozen=True, kw_only=True):
    """Collusion signals per pair of the league's players, flagged ones first."""

    league_id: str
    hands: Annotated[int, msgspec.Meta(description="The league's finished hands the signals read.")]
    fdr: Annotated[
        float, msgspec.Meta(description="The false discovery rate a signal is flagged at.")
    ]
    signals: list[IntegritySignal]
