"""The rest of a platform's API through the generated client: every operation ``play.py`` does
not call (a league and its round, a substitution and a withdrawal, its standings and exports,
watch links, a seat marked away, webhooks and their deliveries, the metrics, and the audit
log: a finished hand's receipt, the logs, a signed checkpoint and both proofs), each 2xx
answer its parsed model, as ``play.py`` holds its own to.

``python operations.py BASE_URL API_KEY HOOK_URL`` (the generated package on ``PYTHONPATH``)
prints one JSON line: the operations called and what the server said, for the test to hold up.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from play import main as play_game
from play import parsed, play_out, retrying
from spades_client import AuthenticatedClient
from spades_client.api.games import create_game, get_game
from spades_client.api.leagues import (
    adjust_score,
    create_league,
    export_results,
    export_standings,
    get_league,
    get_round,
    league_boards,
    league_integrity,
    standings,
    start_round,
    substitute,
    void_table,
    withdraw,
)
from spades_client.api.log import (
    get_consistency_proof,
    get_hand_receipt,
    get_inclusion_proof,
    get_log_checkpoint,
    list_logs,
)
from spades_client.api.seats import mark_away, take_seat
from spades_client.api.service import metrics
from spades_client.api.watch_links import (
    create_game_watch_link,
    create_league_watch_link,
    revoke_game_watch_links,
    revoke_league_watch_links,
)
from spades_client.api.webhooks import (
    create_webhook,
    delete_webhook,
    list_deliveries,
    list_webhooks,
    replay_deliveries,
)
from spades_client.models import (
    Adjustment,
    AdjustScore,
    ClockSettings,
    ConsistencyProof,
    CreatedWebhook,
    CreateGame,
    CreateGameRuleSetInput,
    CreateLeague,
    CreateLeagueFormat,
    CreateLeagueRuleSetInput,
    CreateWatchLink,
    CreateWebhook,
    CreateWebhookEventsItem,
    DeliveryPage,
    EventPage,
    InclusionProof,
    IntegrityReport,
    League,
    LeagueBoards,
    LeagueResults,
    LeagueRound,
    Logs,
    PublicState,
    Receipt,
    Replay,
    Replayed,
    RoundStarted,
    SeatTaken,
    Standings,
    Substituted,
    TakeSeat,
    VoidedTable,
    VoidTable,
    WatchLink,
    WebhookList,
    Withdraw,
    Withdrawn,
)
from spades_client.models import Substitute as SubstituteBody
from spades_client.types import Response

RECEIPT_WAIT_S = 30.0
"""How long the log may take to hold a finished hand (it follows the stream a moment behind)."""
PLAYERS = ["ada", "bo", "cy", "di", "ed", "flo", "gus", "hal"]
RULES = {"preset": "partnership", "max_hands": 1}


def emptied(response: Response[Any], what: str) -> int:
    """A 204's status; anything else stops the program."""
    if response.status_code != 204:
        raise SystemExit(f"{what}: {response.status_code} {response.content!r}")
    return int(response.status_code)


def league_operations(platform: AuthenticatedClient, base_url: str) -> dict[str, Any]:
    """A league of two tables: its first round, a substitute, a withdrawal, a table played out
    (by the substitute too) and voided, an adjusted score, what it reports."""
    body = CreateLeague(
        name="Thursday", rules=CreateLeagueRuleSetInput.from_dict(RULES), players=PLAYERS, rounds=2
    )
    league = parsed(
        retrying(lambda: create_league.sync_detailed(client=platform, body=body)),
        League,
        "createLeague",
    )
    league_id = league.league_id
    # An optional body left out (the round is the next one): the client sends no body at all.
    started = parsed(
        retrying(partial(start_round.sync_detailed, league_id, client=platform)),
        RoundStarted,
        "startRound",
    )
    first = parsed(
        retrying(partial(get_round.sync_detailed, league_id, 1, client=platform)),
        LeagueRound,
        "getRound",
    )
    player = first.tables[0].players[0]
    swap = SubstituteBody(player=player, substitute="zed")
    substituted = parsed(
        retrying(partial(substitute.sync_detailed, league_id, client=platform, body=swap)),
        Substituted,
        "substitute",
    )
    seated = started.tables[0]
    tokens = [seat.token for seat in sorted(seated.seats, key=lambda seat: seat.seat)]
    tokens[substituted.seat] = substituted.token
    play_out(base_url, seated.game_id, tokens)
    played = parsed(
        retrying(partial(get_game.sync_detailed, seated.game_id, client=platform)),
        PublicState,
        "getGame",
    )
    voided = parsed(
        retrying(
            partial(
                void_table.sync_detailed,
                league_id,
                client=platform,
                body=VoidTable(game_id=seated.game_id, reason="a misdeal, found after"),
            )
        ),
        VoidedTable,
        "voidTable",
    )
    penalty = AdjustScore(player=player, points=-10, reason="slow play", round_=1)
    adjusted = parsed(
        retrying(partial(adjust_score.sync_detailed, league_id, client=platform, body=penalty)),
        Adjustment,
        "adjustScore",
    )
    leaving = Withdraw(player=first.tables[1].players[0])
    withdrawn = parsed(
        retrying(partial(withdraw.sync_detailed, league_id, client=platform, body=leaving)),
        Withdrawn,
        "withdraw",
    )
    link = parsed(
        retrying(
            partial(
                create_league_watch_link.sync_detailed,
                league_id,
                client=platform,
                body=CreateWatchLink(expires_in_s=600),
            )
        ),
        WatchLink,
        "createLeagueWatchLink",
    )
    revoked = emptied(
        retrying(partial(revoke_league_watch_links.sync_detailed, league_id, client=platform)),
        "revokeLeagueWatchLinks",
    )
    ranked = parsed(
        retrying(partial(standings.sync_detailed, league_id, client=platform)),
        Standings,
        "standings",
    )
    kept = parsed(
        retrying(partial(export_standings.sync_detailed, league_id, client=platform)),
        Standings,
        "exportStandings",
    )
    results = parsed(
        retrying(partial(export_results.sync_detailed, league_id, client=platform)),
        LeagueResults,
        "exportResults",
    )
    again = parsed(
        retrying(partial(get_league.sync_detailed, league_id, client=platform)),
        League,
        "getLeague",
    )
    integrity = parsed(
        retrying(partial(league_integrity.sync_detailed, league_id, client=platform)),
        IntegrityReport,
        "leagueIntegrity",
    )
    # A duplicate event's cross-table: none of its boards is played yet.
    duplicate = CreateLeague(
        name="Pairs",
        rules=CreateLeagueRuleSetInput.from_dict(RULES),
        players=PLAYERS,
        format_=CreateLeagueFormat.DUPLICATE,
    )
    event = parsed(
        retrying(lambda: create_league.sync_detailed(client=platform, body=duplicate)),
        League,
        "createLeague",
    )
    crossed = parsed(
        retrying(partial(league_boards.sync_detailed, event.league_id, client=platform)),
        LeagueBoards,
        "leagueBoards",
    )
    return {
        "league_id": league_id,
        "tables": len(started.tables),
        "round_tables": [table.game_id for table in first.tables],
        "substitute": [substituted.player, substituted.substitute, substituted.game_id],
        "withdrawn": withdrawn.player,
        "league_link": link.url,
        "league_links_revoked": revoked,
        "standings": [standing.player for standing in ranked.players],
        "exported_standings": [standing.player for standing in kept.players],
        "results": len(results.results),
        "league_withdrawn": list(again.withdrawn),
        "league_substitutions": len(again.substitutions),
        "integrity": [integrity.league_id, integrity.hands],
        "played_hands": played.hand_number,
        "duplicate_boards": [str(event.format_), len(crossed.boards)],
        "voided": [voided.game_id, voided.round_, voided.table],
        "adjusted": [adjusted.number, adjusted.player, adjusted.points],
        "standing_adjustments": len(ranked.adjustments),
        "standing_voided": [table.game_id for table in ranked.voided],
    }


def game_operations(platform: AuthenticatedClient) -> dict[str, Any]:
    """A clocked game whose west is marked away, and its watch links."""
    body = CreateGame(
        rules=CreateGameRuleSetInput.from_dict({"preset": "partnership"}),
        clock=ClockSettings(turn_s=60.0),
    )
    game = parsed(
        retrying(lambda: create_game.sync_detailed(client=platform, body=body)),
        PublicState,
        "createGame",
    )
    for seat in game.seats:
        taking = TakeSeat(player=PLAYERS[seat.seat], seat=seat.seat)
        parsed(
            retrying(partial(take_seat.sync_detailed, game.game_id, client=platform, body=taking)),
            SeatTaken,
            "takeSeat",
        )
    away = parsed(
        retrying(partial(mark_away.sync_detailed, game.game_id, 3, client=platform)),
        EventPage,
        "markAway",
    )
    link = parsed(
        retrying(
            partial(
                create_game_watch_link.sync_detailed,
                game.game_id,
                client=platform,  # no body: the link's default lifetime
            )
        ),
        WatchLink,
        "createGameWatchLink",
    )
    revoked = emptied(
        retrying(partial(revoke_game_watch_links.sync_detailed, game.game_id, client=platform)),
        "revokeGameWatchLinks",
    )
    return {
        "away_events": [str(record.event.type_) for record in away.events],
        "game_link": link.url,
        "game_links_revoked": revoked,
    }


def webhook_operations(platform: AuthenticatedClient, hook_url: str) -> dict[str, Any]:
    """An endpoint made, listed, its deliveries read and sent again, and deleted."""
    body = CreateWebhook(url=hook_url, events=[CreateWebhookEventsItem.GAME_FINISHED])
    created = parsed(
        retrying(lambda: create_webhook.sync_detailed(client=platform, body=body)),
        CreatedWebhook,
        "createWebhook",
    )
    listed = parsed(
        retrying(lambda: list_webhooks.sync_detailed(client=platform)), WebhookList, "listWebhooks"
    )
    deliveries = parsed(
        retrying(partial(list_deliveries.sync_detailed, created.id, client=platform)),
        DeliveryPage,
        "listDeliveries",
    )
    since = Replay(since=datetime.now(UTC) - timedelta(hours=1))
    replayed = parsed(
        retrying(partial(replay_deliveries.sync_detailed, created.id, client=platform, body=since)),
        Replayed,
        "replayDeliveries",
    )
    deleted = emptied(
        retrying(partial(delete_webhook.sync_detailed, created.id, client=platform)),
        "deleteWebhook",
    )
    return {
        "endpoint_listed": created.id in {endpoint.id for endpoint in listed.webhooks},
        "deliveries": len(deliveries.deliveries),
        "replayed": replayed.replayed,
        "endpoint_deleted": deleted,
    }


def log_operations(platform: AuthenticatedClient, base_url: str, api_key: str) -> dict[str, Any]:
    """A two-player game played out, its hand's receipt once the log holds it, the logs, the
    receipt's partition's signed checkpoint, and the proofs of its leaf and of its tree."""
    game_id = str(play_game(base_url, api_key, "two-player", 0)["game_id"])
    deadline = time.monotonic() + RECEIPT_WAIT_S
    while True:
        answer = retrying(partial(get_hand_receipt.sync_detailed, game_id, 1, client=platform))
        if answer.status_code != 404 or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    receipt = parsed(answer, Receipt, "getHandReceipt")
    logs = parsed(retrying(lambda: list_logs.sync_detailed(client=platform)), Logs, "listLogs")
    head = next(log for log in logs.logs if log.partition == receipt.partition)
    note = retrying(partial(get_log_checkpoint.sync_detailed, receipt.partition, client=platform))
    if note.status_code != 200 or not isinstance(note.parsed, str):  # text/plain
        raise SystemExit(f"getLogCheckpoint: {note.status_code} {note.content!r}")
    inclusion = parsed(
        retrying(
            partial(
                get_inclusion_proof.sync_detailed,
                receipt.partition,
                client=platform,
                index=receipt.leaf_index,
                size=receipt.tree_size,
            )
        ),
        InclusionProof,
        "getInclusionProof",
    )
    consistency = parsed(
        retrying(
            partial(
                get_consistency_proof.sync_detailed,
                receipt.partition,
                client=platform,
                old=receipt.tree_size,
                new=head.size,
            )
        ),
        ConsistencyProof,
        "getConsistencyProof",
    )
    return {
        "log_game": game_id,
        "receipt": [receipt.game_id, receipt.hand, receipt.signed],
        "receipt_root": receipt.checkpoint.split("\n")[2],
        "inclusion_root": inclusion.root,
        "checkpoint_origin": note.parsed.split("\n", 1)[0],
        "receipt_origin": receipt.origin,
        "consistency": [consistency.old, consistency.new, consistency.old_root],
    }


def main(base_url: str, api_key: str, hook_url: str) -> dict[str, Any]:
    platform = AuthenticatedClient(base_url=base_url, token=api_key)
    scraped = retrying(lambda: metrics.sync_detailed(client=platform))
    if scraped.status_code != 200:  # Prometheus text: the generator leaves it unparsed
        raise SystemExit(f"metrics: {scraped.status_code} {scraped.content!r}")
    return {
        "metrics_lines": scraped.content.decode().count("\n"),
        **league_operations(platform, base_url),
        **game_operations(platform),
        **webhook_operations(platform, hook_url),
        **log_operations(platform, base_url, api_key),
    }


if __name__ == "__main__":
    url, key, hook = sys.argv[1:4]
    print(json.dumps(main(url, key, hook)))
