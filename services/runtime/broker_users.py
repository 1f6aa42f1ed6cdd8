"""Who may do what on the broker: one NATS user per process kind, with only the subjects it uses.

:data:`BROKER_USERS` is the one definition. The embedded server's configuration is rendered
from it (:func:`authorization_config`), so is ``deploy/nats/authorization.conf``
(``spades broker authorization``), and the tests check the users against a real server. A new
kind of process is one more entry here.

What each process really does on NATS, and so what it is given:

- every process talks to JetStream through its own inbox, ``_INBOX.<user>.>`` (the clients
  connect with that inbox prefix), so no user can read the answers meant for another;
- reading a stream (``_reads``): stream info, message gets (``STREAM.MSG.GET``, and direct
  gets, which a stream of one replica allows), consumers of its own filtered as the reader
  likes, each made under a random name in the subject (``CONSUMER.CREATE.<stream>.<name>``,
  :mod:`.ordered`; nats-py names its pull consumers so too), pulling from them, their flow
  control (``$JS.FC``). Never the unnamed create subject (``CONSUMER.CREATE.<stream>``): a
  request there may name any consumer in its body and the server changes that consumer (a
  millisecond's ``inactive_threshold``, and it is deleted), so no reader may send to it;
- following a stream durably (``_follows``): the same, plus the process's own consumer, by
  name (``spades-<kind>``), made as a durable and made again from a position
  (``CONSUMER.DELETE``), and acknowledged (``$JS.ACK``). No user deletes, acknowledges, makes,
  changes or pulls from another's consumer: the allow-list's ``CONSUMER.CREATE.<stream>.>`` and
  ``MSG.NEXT.<stream>.*`` are narrowed by a deny-list of every other user's consumers on the
  stream (:func:`_guarded`; the projections user could once delete the engine's round watch,
  and any user change it). Should a consumer still vanish, its owner makes it again after a
  backoff, never asking for it in a loop (:mod:`.consumer`, :mod:`.follower`);
- the gateway sends commands (``spades.commands.*``, ``spades.part.<p>.commands.*``,
  ``spades.engines.*``); the timers send timeouts alone, on subjects of their own
  (``spades.timeouts.*``, ``spades.part.<p>.timeouts.*``, ``spades.engines.timeouts.*``), where
  the engine answers nothing but a timeout and which the gateway may not send to;
- the engine alone declares the streams and appends to them (its appends are JetStream
  publishes to the stream subjects) and answers the command subjects (``allow_responses``: it may
  answer only the requests it was sent); its round watch follows the partitions it serves
  through durable consumers of its own (``_follows``), keeping its positions in a checkpoint bucket;
- every worker kind renews its leases and membership under its own keys of the claims bucket
  (``_claims``), and keeps positions outside a database under its own keys (``_checkpoints``);
- every process that reads games reads the archive of finished games (``_reads``), which the
  engine declares (it never writes to it);
- nobody but ``admin`` may delete or purge a stream or a message, or touch another stream:
  ``spades archive``, which writes the archive and purges what it archived, is the operator's.

``admin`` is the operator's user, for the CLI tools that read the stream or manage it (audit,
``projections lag``, backups to come): everything, like the account's owner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec

from contracts.partitions import (
    ANY_ENGINE_SUBJECTS,
    ANY_ENGINE_TIMEOUT_SUBJECTS,
    LEGACY_STREAM,
    ONE,
    Partitions,
)
from contracts.wire import (
    ARCHIVE_STREAM,
    LEAGUE_COMMAND_SUBJECTS,
    LEAGUE_SUBJECTS,
    LEAGUES_STREAM,
)

CLAIMS_BUCKET = "SPADES_CLAIMS"
"""The key-value bucket of partition leases (:mod:`services.runtime.claims`)."""
CHECKPOINTS_BUCKET = "SPADES_CHECKPOINTS"
"""The key-value bucket of positions kept outside a database
(:mod:`services.runtime.checkpoints`)."""

ADMIN = "admin"
INBOX_ROOT = "_INBOX"


class BrokerUser(msgspec.Struct, frozen=True):
    """What one user may publish and subscribe to (NATS subject patterns, allow-lists)."""

    role: str
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    responds: bool = False
    """May answer any request it receives, once, on that request's reply subject."""
    deny_publish: tuple[str, ...] = ()
    """Exceptions to ``publish`` (a deny wins over an allow): other users' consumers."""

    def may_publish(self, subject: str) -> bool:
        return any(subject_matches(pattern, subject) for pattern in self.publish) and not any(
            subject_matches(pattern, subject) for pattern in self.deny_publish
        )

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
        f"{api}.CONSUMER.CREATE.{stream}.>",
        f"{api}.CONSUMER.INFO.{stream}.*",
        f"{api}.CONSUMER.MSG.NEXT.{stream}.*",
        f"$JS.FC.{stream}.>",
    )


def _follows(stream: str, kind: str) -> tuple[str, ...]:
    """One durable consumer of its own on ``stream``, the follower's of ``kind``
    (``spades-<kind>``, :mod:`services.runtime.follower`): made, made again from a position,
    pulled and acknowledged; no other consumer touched."""
    return (*_reads(stream), *_owns(stream, kind))


def _owns(stream: str, kind: str) -> tuple[str, ...]:
    """What :func:`_follows` adds to reading: the consumer ``spades-<kind>`` alone, made as a
    durable, deleted, acknowledged."""
    api, consumer = "$JS.API", f"spades-{kind}"
    return (
        f"{api}.CONSUMER.DURABLE.CREATE.{stream}.{consumer}",
        f"{api}.CONSUMER.DELETE.{stream}.{consumer}",
        f"$JS.ACK.{stream}.{consumer}.>",
    )


EARLIER_MODELS = ("games", "scoreboard", "hands", "players", "standings")
"""The read models of the versions whose projections followed the one stream with a consumer
per model (or one for all): the names those consumers had are history, not the models of now."""
EARLIER_PROJECTIONS = (*EARLIER_MODELS, "-".join(sorted(EARLIER_MODELS)))
"""The labels of the consumers projections once followed the one stream with (deleted at
start, :mod:`services.projections.service`): those models' names, whatever models there are now
(a model added since, ``integrity``, never had one)."""


def _declares(stream: str, subjects: str) -> tuple[str, ...]:
    return (f"$JS.API.STREAM.CREATE.{stream}", f"$JS.API.STREAM.UPDATE.{stream}", subjects)


def _leads(stream: str) -> tuple[str, ...]:
    """Moving a stream's leader to another node (:mod:`services.runtime.leaders`)."""
    return (f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}",)


def _claims(kind: str) -> tuple[str, ...]:
    """Leases and membership of one kind of work in the claims bucket (:mod:`.claims`), and
    making the bucket if no one has yet."""
    bucket = f"KV_{CLAIMS_BUCKET}"
    return (
        f"$KV.{CLAIMS_BUCKET}.{kind}.>",
        _members(kind),
        f"$JS.API.STREAM.CREATE.{bucket}",
        f"$JS.API.STREAM.INFO.{bucket}",
        f"$JS.API.STREAM.MSG.GET.{bucket}",
        f"$JS.API.DIRECT.GET.{bucket}.>",
    )


def _members(kind: str) -> str:
    """The pings of one kind's members, which each answers on its own subject (a member whose
    subject finds no responders is gone, :mod:`.claims`)."""
    return f"spades.members.{kind}.>"


def _checkpoints(kind: str) -> tuple[str, ...]:
    """Positions one kind of work keeps in the checkpoint bucket (:mod:`.checkpoints`)."""
    bucket = f"KV_{CHECKPOINTS_BUCKET}"
    return (
        f"$KV.{CHECKPOINTS_BUCKET}.{kind}.>",
        f"$JS.API.STREAM.CREATE.{bucket}",
        f"$JS.API.STREAM.INFO.{bucket}",
        f"$JS.API.STREAM.MSG.GET.{bucket}",
        f"$JS.API.DIRECT.GET.{bucket}.>",
    )


def _layout_checks(partitions: Partitions) -> tuple[str, ...]:
    """Looking at the streams another layout would have (:func:`~services.runtime.game_stream.
    check_partitions`): a process started with the wrong K must find out, not look for games
    in the wrong stream. Stream info only: counts, never a message."""
    beyond = Partitions(partitions.count + 1).stream(partitions.count)
    others = {LEGACY_STREAM, Partitions(2).stream(0), beyond} - set(partitions.streams)
    return tuple(f"$JS.API.STREAM.INFO.{stream}" for stream in sorted(others))


def _each(streams: Iterable[str], grant: Callable[[str], tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(subject for stream in streams for subject in grant(stream))


def _owned(user: BrokerUser) -> set[tuple[str, str]]:
    """The (stream, consumer) pairs ``user`` owns: those it makes as a durable or deletes."""
    owned: set[tuple[str, str]] = set()
    for subject in user.publish:
        for verb in ("$JS.API.CONSUMER.DURABLE.CREATE.", "$JS.API.CONSUMER.DELETE."):
            if subject.startswith(verb) and "*" not in subject and ">" not in subject:
                stream, consumer = subject.removeprefix(verb).split(".")
                owned.add((stream, consumer))
    return owned


def _guarded(users: dict[str, BrokerUser]) -> dict[str, BrokerUser]:
    """Each user but ``admin`` denied every other user's consumers on the streams it reads:
    no create naming them (which would change them), no pull from them."""
    every: set[tuple[str, str]] = set()
    for name, user in users.items():
        if name != ADMIN:
            every |= _owned(user)
    guarded = {}
    for name, user in users.items():
        if name == ADMIN:
            guarded[name] = user
            continue
        others = sorted(
            (stream, consumer)
            for stream, consumer in every - _owned(user)
            if user.may_publish(f"$JS.API.CONSUMER.CREATE.{stream}.{consumer}")
        )
        deny = tuple(
            subject
            for stream, consumer in others
            for subject in (
                f"$JS.API.CONSUMER.CREATE.{stream}.{consumer}",
                f"$JS.API.CONSUMER.CREATE.{stream}.{consumer}.>",
                f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}",
            )
        )
        guarded[name] = msgspec.structs.replace(user, deny_publish=deny)
    return guarded


def broker_users(partitions: Partitions = ONE) -> dict[str, BrokerUser]:
    """Every user of a deployment of ``partitions``: the game streams are named one by one (a
    permission cannot match part of a stream's name)."""
    return _guarded(_allowed(partitions))


def _allowed(partitions: Partitions) -> dict[str, BrokerUser]:
    """Every user's allow-lists (:func:`broker_users` adds the deny-lists)."""
    games = partitions.streams
    game_subjects = tuple(partitions.subjects(p) for p in partitions.indexes)
    commands = tuple(partitions.command_subjects(p) for p in partitions.indexes)
    sends = (*commands, ANY_ENGINE_SUBJECTS)
    timeouts = tuple(partitions.timeout_subjects(p) for p in partitions.indexes)
    fires = (*timeouts, ANY_ENGINE_TIMEOUT_SUBJECTS)
    checks = _layout_checks(partitions)
    return {
        "engine": BrokerUser(
            role="answers the commands; declares the streams and alone appends to them; "
            "ends rounds",
            publish=(
                *(
                    subject
                    for p in partitions.indexes
                    for subject in _declares(games[p], game_subjects[p])
                ),
                *_declares(LEAGUES_STREAM, LEAGUE_SUBJECTS),
                f"$JS.API.STREAM.CREATE.{ARCHIVE_STREAM}",
                f"$JS.API.STREAM.UPDATE.{ARCHIVE_STREAM}",
                *_reads(ARCHIVE_STREAM),
                *(subject for stream in games for subject in _follows(stream, "round-watch")),
                *_each(games, _leads),
                *_reads(LEAGUES_STREAM),
                *_claims("engine"),
                *_checkpoints("round-watch"),
                *checks,
            ),
            subscribe=(
                *sends,
                *fires,
                LEAGUE_COMMAND_SUBJECTS,
                _members("engine"),
                _inbox("engine"),
            ),
            responds=True,
        ),
        "gateway": BrokerUser(
            role="sends commands, reads and follows the streams; writes, deletes, purges nothing",
            publish=(
                *sends,
                LEAGUE_COMMAND_SUBJECTS,
                *_each(games, _reads),
                *_reads(LEAGUES_STREAM),
                *_reads(ARCHIVE_STREAM),
                *checks,
            ),
            subscribe=(_inbox("gateway"),),
        ),
        "projections": BrokerUser(
            role="reads the streams through durable consumers it acknowledges; sends no command",
            publish=(
                *(subject for stream in games for subject in _follows(stream, "projections")),
                *(subject for stream in games for subject in _owns(stream, "projections-replay")),
                *_reads(LEAGUES_STREAM),
                # the consumers an earlier version followed the one stream with, by model
                *(
                    f"$JS.API.CONSUMER.DELETE.{LEGACY_STREAM}.spades-projections-{label}"
                    for label in EARLIER_PROJECTIONS
                ),
                *_reads(ARCHIVE_STREAM),
                *_claims("projections"),
                *checks,
            ),
            subscribe=(_members("projections"), _inbox("projections")),
            responds=True,
        ),
        "timers": BrokerUser(
            role="fires a turn's timeout, from the turns in the game stream; no other command",
            publish=(
                *fires,
                *(subject for stream in games for subject in _follows(stream, "timers")),
                *_reads(ARCHIVE_STREAM),
                *_claims("timers"),
                *_checkpoints("timers"),
                *checks,
            ),
            subscribe=(_members("timers"), _inbox("timers")),
            responds=True,
        ),
        "webhooks": BrokerUser(
            role="delivers what happens in games and leagues, from durable consumers; no command",
            publish=(
                *(subject for stream in games for subject in _follows(stream, "webhooks")),
                *_follows(LEAGUES_STREAM, "webhooks-leagues"),
                *_reads(ARCHIVE_STREAM),
                # the one consumer of the game stream an earlier version followed it with
                f"$JS.API.CONSUMER.DELETE.{games[0]}.spades-webhooks-games",
                *_claims("webhooks"),
                *_claims("webhooks-leagues"),
                *checks,
            ),
            subscribe=(_members("webhooks"), _members("webhooks-leagues"), _inbox("webhooks")),
            responds=True,
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


BROKER_USERS: dict[str, BrokerUser] = broker_users()
"""The users of a one-partition deployment (their names are every deployment's)."""


def permissions(user: BrokerUser) -> dict[str, object]:
    """One user's ``permissions`` block of a nats-server configuration."""
    publish: dict[str, object] = {"allow": list(user.publish)}
    if user.deny_publish:
        publish["deny"] = list(user.deny_publish)
    block: dict[str, object] = {
        "publish": publish,
        "subscribe": {"allow": list(user.subscribe)},
    }
    if user.responds:
        block["allow_responses"] = True
    return block


def authorization_config(
    nkey_of: Callable[[str], str],
    users: Iterable[str] = BROKER_USERS,
    partitions: Partitions = ONE,
) -> dict[str, object]:
    """The ``authorization`` block: every user by its public nkey, with its permissions. With
    no ``no_auth_user``, a client that does not sign the server's nonce is refused."""
    every = broker_users(partitions)
    return {
        "users": [
            {"nkey": nkey_of(name), "permissions": permissions(every[name])} for name in users
        ]
    }


def nkey_variable(user: str) -> str:
    """The environment variable a deployed nats-server reads ``user``'s public nkey from."""
    return f"SPADES_NATS_NKEY_{user.upper()}"


def deployed_authorization(partitions: Partitions = ONE) -> str:
    """``deploy/nats/authorization.conf``: the same users for a deployed server of
    ``partitions``, whose public nkeys come from the environment
    (``$SPADES_NATS_NKEY_<USER>``)."""
    lines = [
        "# The broker's users: one per kind of Spades process, with only the subjects it uses.",
        "# Written by `spades broker authorization` from services/runtime/broker_users.py (a",
        "# test keeps them equal). Each user is its public nkey, read from the nats-server's",
        "# environment; `spades broker keys DIR` makes the key pairs (README.md in this folder).",
        f"# For a deployment of {partitions.count} partition(s) of the game stream.",
        "authorization {",
        "  users: [",
    ]
    for name, user in broker_users(partitions).items():
        lines += [f"    # {name}: {user.role}", "    {", f"      nkey: ${nkey_variable(name)}"]
        lines.append("      permissions: {")
        lines += _permission_lists("publish", user.publish, user.deny_publish)
        lines += _permission_lists("subscribe", user.subscribe, ())
        if user.responds:
            lines.append("        # may answer a request it received, once, on its reply subject")
            lines.append("        allow_responses: true")
        lines += ["      }", "    }"]
    lines += ["  ]", "}", ""]
    return "\n".join(lines)


def _permission_lists(kind: str, allow: tuple[str, ...], deny: tuple[str, ...]) -> list[str]:
    def quoted(subjects: tuple[str, ...]) -> list[str]:
        return [f'          "{subject}"' for subject in subjects]

    if not deny:
        return [f"        {kind}: {{allow: [", *quoted(allow), "        ]}"]
    return [
        f"        {kind}: {{",
        "        allow: [",
        *quoted(allow),
        "        ]",
        "        # other users' consumers: a deny wins over the allow-list's wildcards",
        "        deny: [",
        *quoted(deny),
        "        ]}",
    ]
