"""The broker's users, read from their one definition: no process kind may do more than its job.

The same table is checked against a real server in ``test_broker.py``; here, what it grants.
"""

from __future__ import annotations

import pytest

from contracts.partitions import ONE, Partitions
from contracts.wire import command_subject, game_subject, league_command_subject, league_subject
from services.runtime.broker_users import (
    ADMIN,
    BROKER_USERS,
    broker_users,
    inbox_prefix,
    subject_matches,
)

SERVICES = [name for name in BROKER_USERS if name != ADMIN]

TAKING_BACK = [
    "$JS.API.STREAM.DELETE.SPADES_GAMES",
    "$JS.API.STREAM.PURGE.SPADES_GAMES",
    "$JS.API.STREAM.MSG.DELETE.SPADES_GAMES",
    "$JS.API.STREAM.DELETE.SPADES_LEAGUES",
    "$JS.API.STREAM.PURGE.SPADES_LEAGUES",
    "$JS.API.STREAM.MSG.DELETE.SPADES_LEAGUES",
    "$JS.API.STREAM.RESTORE.SPADES_GAMES",
    "$JS.API.STREAM.SNAPSHOT.SPADES_GAMES",
    "$JS.API.STREAM.CREATE.ANOTHER",
]


def test_only_the_engine_appends_to_games_and_leagues() -> None:
    writers = {
        name
        for name, user in BROKER_USERS.items()
        if user.may_publish(game_subject("g1")) or user.may_publish(league_subject("l1"))
    }
    assert writers == {"engine", ADMIN}


def test_only_the_engine_declares_or_changes_the_streams() -> None:
    for stream in ("SPADES_GAMES", "SPADES_LEAGUES"):
        for action in ("CREATE", "UPDATE"):
            subject = f"$JS.API.STREAM.{action}.{stream}"
            allowed = {name for name, user in BROKER_USERS.items() if user.may_publish(subject)}
            assert allowed == {"engine", ADMIN}, subject


@pytest.mark.parametrize("subject", TAKING_BACK)
def test_no_service_deletes_purges_or_replaces_a_stream(subject: str) -> None:
    assert [name for name in SERVICES if BROKER_USERS[name].may_publish(subject)] == []
    assert BROKER_USERS[ADMIN].may_publish(subject)


def test_commands_come_only_from_the_gateway_and_timeouts_only_from_the_timers() -> None:
    def senders(subject: str) -> set[str]:
        return {name for name in SERVICES if BROKER_USERS[name].may_publish(subject)}

    # the bid or play of a compromised timers process is refused by the server
    for layout in (ONE, Partitions(6)):
        users = broker_users(layout)
        game = "g1"
        for subject in (layout.command_subject(game), Partitions.any_engine_subject(game)):
            assert {n for n in SERVICES if users[n].may_publish(subject)} == {"gateway"}
        for subject in (layout.timeout_subject(game), Partitions.any_engine_timeout_subject(game)):
            assert {n for n in SERVICES if users[n].may_publish(subject)} == {"timers"}
            assert {n for n in SERVICES if users[n].may_subscribe(subject)} == {"engine"}
    assert senders(command_subject("g1")) == {"gateway"}
    assert senders(league_command_subject("l1")) == {"gateway"}


def test_only_the_engine_receives_commands_and_the_gateway_answers_nothing() -> None:
    for subject in (command_subject("g1"), league_command_subject("l1")):
        receivers = {name for name in SERVICES if BROKER_USERS[name].may_subscribe(subject)}
        assert receivers == {"engine"}
    # the workers answer only the pings of their own kind's members (services.runtime.claims)
    responders = {name for name in SERVICES if BROKER_USERS[name].responds}
    assert responders == {"engine", "projections", "timers", "webhooks"}
    for name in responders - {"engine"}:
        user = BROKER_USERS[name]
        assert user.may_subscribe(f"spades.members.{name}.host-1-ab")
        assert not user.may_subscribe(command_subject("g1"))
        other = "engine" if name != "engine" else "timers"
        assert not user.may_subscribe(f"spades.members.{other}.host-1-ab")


def test_each_service_reads_only_its_own_inbox() -> None:
    for name in SERVICES:
        user = BROKER_USERS[name]
        assert user.may_subscribe(f"{inbox_prefix(name)}.abc.1")
        assert not user.may_subscribe("_INBOX.>")
        assert not user.may_subscribe("_INBOX.abc")
        for other in SERVICES:
            if other != name:
                assert not user.may_subscribe(f"{inbox_prefix(other)}.abc.1"), (name, other)


def test_only_durable_readers_acknowledge_and_delete_their_consumers() -> None:
    for kind in ("projections", "timers", "webhooks"):
        ack = f"$JS.ACK.SPADES_GAMES.spades-{kind}.1.2.3.4.5"
        delete = f"$JS.API.CONSUMER.DELETE.SPADES_GAMES.spades-{kind}"
        for subject in (ack, delete):
            allowed = {name for name in SERVICES if BROKER_USERS[name].may_publish(subject)}
            assert kind in allowed, subject
            assert allowed <= {"projections", "timers", "webhooks"}, subject


def test_the_timers_and_webhooks_touch_no_consumer_but_their_own() -> None:
    for name, other in (("timers", "spades-webhooks"), ("webhooks", "spades-timers")):
        user = BROKER_USERS[name]
        assert not user.may_publish(f"$JS.ACK.SPADES_GAMES.{other}.1.2.3.4.5")
        assert not user.may_publish(f"$JS.API.CONSUMER.DELETE.SPADES_GAMES.{other}")
        assert not user.may_publish("$JS.API.CONSUMER.DELETE.SPADES_GAMES.spades-round-watch")


def test_the_engine_acknowledges_and_deletes_only_its_round_watchs_consumer() -> None:
    engine = BROKER_USERS["engine"]
    watch = "spades-round-watch"
    assert engine.may_publish(f"$JS.ACK.SPADES_GAMES.{watch}.1.2.3.4.5")
    assert engine.may_publish(f"$JS.API.CONSUMER.DURABLE.CREATE.SPADES_GAMES.{watch}")
    assert engine.may_publish(f"$JS.API.CONSUMER.DELETE.SPADES_GAMES.{watch}")
    assert not engine.may_publish("$JS.API.CONSUMER.DURABLE.CREATE.SPADES_GAMES.other")
    assert not engine.may_publish(f"$JS.ACK.SPADES_LEAGUES.{watch}.1.2.3.4.5")
    for consumer in ("spades-projections", "spades-webhooks-games"):
        assert not engine.may_publish(f"$JS.API.CONSUMER.DELETE.SPADES_GAMES.{consumer}")


def test_nobody_but_the_admin_publishes_outside_the_spades_subjects() -> None:
    for name in SERVICES:
        user = BROKER_USERS[name]
        for subject in ("$SYS.REQ.SERVER.PING", "$JS.API.INFO", "other.app", "$KV.x.y"):
            assert not user.may_publish(subject), (name, subject)


@pytest.mark.parametrize(
    ("pattern", "subject", "matches"),
    [
        ("spades.games.>", "spades.games.g1", True),
        ("spades.games.>", "spades.games", False),
        ("spades.commands.*", "spades.commands.g1", True),
        ("spades.commands.*", "spades.commands.g1.x", False),
        ("$JS.API.CONSUMER.INFO.S.*", "$JS.API.CONSUMER.INFO.S.c", True),
        ("$JS.API.CONSUMER.INFO.S.*", "$JS.API.CONSUMER.INFO.T.c", False),
        (">", "anything.at.all", True),
        ("a.b", "a.b.c", False),
    ],
)
def test_subject_patterns_match_as_nats_matches_them(
    pattern: str, subject: str, matches: bool
) -> None:
    assert subject_matches(pattern, subject) is matches


@pytest.mark.parametrize("partitions", [1, 6])
def test_no_user_deletes_or_makes_a_durable_of_anothers(partitions: int) -> None:
    """The projections user could delete the engine's round watch."""
    layout = Partitions(partitions)
    users = broker_users(layout)
    own = {"engine": {"round-watch"}, "projections": {"projections", "projections-replay"},
           "timers": {"timers"}, "webhooks": {"webhooks"}, "gateway": set()}  # fmt: skip
    for stream in layout.streams:
        for name, kinds in own.items():
            for kind in ("round-watch", "projections", "projections-replay", "timers",
                         "webhooks"):  # fmt: skip
                consumer = f"spades-{kind}"
                for subject in (
                    f"$JS.API.CONSUMER.DELETE.{stream}.{consumer}",
                    f"$JS.ACK.{stream}.{consumer}.1.2.3.4.5",
                    f"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.{consumer}",
                ):
                    assert users[name].may_publish(subject) is (kind in kinds), (name, subject)
