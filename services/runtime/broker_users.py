"""Who may do what on the broker: one NATS user per process kind, with only the subjects it uses.

:data:`BROKER_USERS` is the one definition. The embedded server's configuration is rendered
from it (:func:`authorization_config`), so is ``deploy/nats/authorization.conf``
(``spades broker authorization``), and the tests check the users against a real server. A new
kind of process is one more entry here.

What each process really does on NATS, and so what it is given:

- every process talks to JetStream through its own inbox, ``_INBOX.<user>.>`` (the clients
  connect with that inbox prefix), so no user can read the answers meant for another;
- reading a stream (``_reads``): stream info, message gets (``STREAM.MSG.GET``, and direct
  gets, which a stream of one replica allows), ephemeral and ordered consumers filtered as
  the reader likes, pulling from them, their flow control (``$JS.FC``);
- consuming a stream durably (``_consumes``): the same, plus durable consumers made and made
  again from a position (``CONSUMER.DELETE``) and acknowledgements (``$JS.ACK``);
- the engine alone declares the streams and appends to them (its appends are JetStream
  publishes to the stream subjects) and answers the command subjects (``allow_responses``: it may
  answer only the requests it was sent); its round watch pulls and acknowledges one durable
  consumer of the game stream, its own (``_watches``), and may delete none;
- nobody but ``admin`` may delete or purge a stream or a message, or touch another stream.

``admin`` is the operator's user, for the CLI tools that read the stream or manage it (audit,
``projections lag``, backups to come): everything, like the account's owner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec

from contracts.wire import (
    COMMAND_SUBJECTS,
    GAME_SUBJECTS,
    GAMES_STREAM,
    LEAGUE_COMMAND_SUBJECTS,
    LEAGUE_SUBJECTS,
    LEAGUES_STREAM,
    ROUND_WATCH_CONSUMER,
)

ADMIN = "admin"
INBOX_ROOT = "_INBOX"


class BrokerUser(msgspec.Struct, frozen=True):
    """What one user may publish and subscribe to (NATS subject patterns, allow-lists)."""

    role: str
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    responds: bool = False
    """May answer any request it receives, once, on that request's reply subject."""

    def may_publish(self, subject: str) -> bool:
        return any(subject_matches(pattern, subject) for pattern in self.publish)

    def may_subscribe(self, subject: str) -> bool:
        return any(subject_matches(pattern, subject) for pattern in self.subscribe)


def inbox_prefix(user: str) -> str:
    """The inbox prefix a process connected as ``user`` must use: only it may read there."""
    return f"{INBOX_ROOT}.{user}"


def _inbox(user: str) -> str:
    return f"{inbox_prefix(user)}.>"


def _reads(stream: str) -> tuple[str, ...]:
    api = "$JS.API"
    return (
        f"{api}.STREAM.INFO.{stream}",
        f"{api}.STREAM.MSG.GET.{stream}",
        f"{api}.DIRECT.GET.{stream}",
        f"{api}.DIRECT.GET.{stream}.>",
        f"{api}.CONSUMER.CREATE.{stream}",
        f"{api}.CONSUMER.CREATE.{stream}.>",
        f"{api}.CONSUMER.INFO.{stream}.*",
        f"{api}.CONSUMER.MSG.NEXT.{stream}.*",
        f"$JS.FC.{stream}.>",
    )


def _consumes(stream: str) -> tuple[str, ...]:
    api = "$JS.API"
    return (
        *_reads(stream),
        f"{api}.CONSUMER.DURABLE.CREATE.{stream}.*",
        f"{api}.CONSUMER.DELETE.{stream}.*",
        f"$JS.ACK.{stream}.>",
    )


def _watches(stream: str, consumer: str) -> tuple[str, ...]:
    """One durable consumer of its own, made and acknowledged; never deleted, nor another's."""
    return (
        *_reads(stream),
        f"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.{consumer}",
        f"$JS.ACK.{stream}.{consumer}.>",
    )


def _declares(stream: str, subjects: str) -> tuple[str, ...]:
    return (f"$JS.API.STREAM.CREATE.{stream}", f"$JS.API.STREAM.UPDATE.{stream}", subjects)


BROKER_USERS: dict[str, BrokerUser] = {
    "engine": BrokerUser(
        role="answers the commands; declares the streams and alone appends to them; ends rounds",
        publish=(
            *_declares(GAMES_STREAM, GAME_SUBJECTS),
            *_declares(LEAGUES_STREAM, LEAGUE_SUBJECTS),
            *_watches(GAMES_STREAM, ROUND_WATCH_CONSUMER),
            *_reads(LEAGUES_STREAM),
        ),
        subscribe=(COMMAND_SUBJECTS, LEAGUE_COMMAND_SUBJECTS, _inbox("engine")),
        responds=True,
    ),
    "gateway": BrokerUser(
        role="sends commands, reads and follows the streams; writes, deletes, purges nothing",
        publish=(
            COMMAND_SUBJECTS,
            LEAGUE_COMMAND_SUBJECTS,
            *_reads(GAMES_STREAM),
            *_reads(LEAGUES_STREAM),
        ),
        subscribe=(_inbox("gateway"),),
    ),
    "projections": BrokerUser(
        role="reads the streams through durable consumers it acknowledges; sends no command",
        publish=(*_consumes(GAMES_STREAM), *_consumes(LEAGUES_STREAM)),
        subscribe=(_inbox("projections"),),
    ),
    "timers": BrokerUser(
        role="fires a turn's timeout as a command, from the turns in the game stream",
        publish=(COMMAND_SUBJECTS, *_consumes(GAMES_STREAM)),
        subscribe=(_inbox("timers"),),
    ),
    "webhooks": BrokerUser(
        role="delivers what happens in games and leagues, from durable consumers; no command",
        publish=(*_consumes(GAMES_STREAM), *_consumes(LEAGUES_STREAM)),
        subscribe=(_inbox("webhooks"),),
    ),
    ADMIN: BrokerUser(
        role="the operator's tools (audit, projections lag, backups): everything",
        publish=(">",),
        subscribe=(">",),
    ),
}


def subject_matches(pattern: str, subject: str) -> bool:
    """Whether a NATS subject pattern (``*`` one token, ``>`` one or more at the end) covers a
    subject."""
    wanted, given = pattern.split("."), subject.split(".")
    for index, token in enumerate(wanted):
        if token == ">":
            return len(given) > index
        if index >= len(given) or token not in ("*", given[index]):
            return False
    return len(given) == len(wanted)


def permissions(user: BrokerUser) -> dict[str, object]:
    """One user's ``permissions`` block of a nats-server configuration."""
    block: dict[str, object] = {
        "publish": {"allow": list(user.publish)},
        "subscribe": {"allow": list(user.subscribe)},
    }
    if user.responds:
        block["allow_responses"] = True
    return block


def authorization_config(
    nkey_of: Callable[[str], str], users: Iterable[str] = BROKER_USERS
) -> dict[str, object]:
    """The ``authorization`` block: every user by its public nkey, with its permissions. With
    no ``no_auth_user``, a client that does not sign the server's nonce is refused."""
    return {
        "users": [
            {"nkey": nkey_of(name), "permissions": permissions(BROKER_USERS[name])}
            for name in users
        ]
    }


def nkey_variable(user: str) -> str:
    """The environment variable a deployed nats-server reads ``user``'s public nkey from."""
    return f"SPADES_NATS_NKEY_{user.upper()}"


def deployed_authorization() -> str:
    """``deploy/nats/authorization.conf``: the same users for a deployed server, whose public
    nkeys come from the environment (``$SPADES_NATS_NKEY_<USER>``)."""
    lines = [
        "# The broker's users: one per kind of Spades process, with only the subjects it uses.",
        "# Written by `spades broker authorization` from services/runtime/broker_users.py (a",
        "# test keeps them equal). Each user is its public nkey, read from the nats-server's",
        "# environment; `spades broker keys DIR` makes the key pairs (README.md in this folder).",
        "authorization {",
        "  users: [",
    ]
    for name, user in BROKER_USERS.items():
        lines += [f"    # {name}: {user.role}", "    {", f"      nkey: ${nkey_variable(name)}"]
        lines.append("      permissions: {")
        lines += _allow_list("publish", user.publish)
        lines += _allow_list("subscribe", user.subscribe)
        if user.responds:
            lines.append("        # may answer a request it received, once, on its reply subject")
            lines.append("        allow_responses: true")
        lines += ["      }", "    }"]
    lines += ["  ]", "}", ""]
    return "\n".join(lines)


def _allow_list(kind: str, subjects: tuple[str, ...]) -> list[str]:
    quoted = [f'          "{subject}"' for subject in subjects]
    return [f"        {kind}: {{allow: [", *quoted, "        ]}"]
