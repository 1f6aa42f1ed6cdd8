"""When a read model may follow the stream it finds: the rules of
:mod:`services.runtime.stream_identity`, without a server."""

from __future__ import annotations

from nats.js import api

from services.runtime.stream_identity import (
    REBUILD_COMMAND,
    Followed,
    StreamIdentity,
    message_digest,
    refusal,
)
from services.store.lag import WorkerLag, refusals

FIRST = StreamIdentity("SPADES_GAMES", "2025-01-01T00:00:00.000000+00:00")
SECOND = StreamIdentity("SPADES_GAMES", "2025-01-02T00:00:00.000000+00:00")
APPLIED = message_digest(b"the commit at 1260")


def test_a_model_that_applied_nothing_follows_any_stream() -> None:
    assert refusal(Followed(0, None, None), SECOND, 0) is None
    assert refusal(Followed(0, FIRST, None), SECOND, 7) is None


def test_its_own_stream_is_followed_where_the_position_fits() -> None:
    assert refusal(Followed(1260, FIRST, APPLIED), FIRST, 1260, APPLIED) is None
    assert refusal(Followed(1260, FIRST, APPLIED), FIRST, 5000, APPLIED) is None
    assert refusal(Followed(1260, FIRST, APPLIED), FIRST, 5000) is None


def test_a_stream_made_anew_is_refused_whatever_its_length() -> None:
    for last in (5, 1260, 5000):
        reason = refusal(Followed(1260, FIRST, APPLIED), SECOND, last, APPLIED)
        assert reason == (
            f"positions up to 1260 belong to stream SPADES_GAMES (created {FIRST.created}), "
            f"not to SPADES_GAMES (created {SECOND.created})"
        )


def test_another_stream_of_another_name_is_refused() -> None:
    other = StreamIdentity("OTHER_GAMES", FIRST.created)
    reason = refusal(Followed(3, FIRST, None), other, 10)
    assert reason is not None
    assert "belong to stream SPADES_GAMES" in reason


def test_a_position_beyond_the_end_of_the_stream_is_refused() -> None:
    reason = refusal(Followed(1260, FIRST, APPLIED), FIRST, 1259)
    assert reason == (
        "position 1260 is beyond the last message of stream SPADES_GAMES, 1259: "
        "the stream was rewound"
    )


def test_a_stream_rewound_and_written_again_is_refused() -> None:
    reason = refusal(Followed(1260, FIRST, APPLIED), FIRST, 5000, message_digest(b"another"))
    assert reason is not None
    assert reason.startswith("the message at position 1260 of stream SPADES_GAMES is not")


def test_positions_stored_before_streams_were_recorded_are_adopted_only_if_they_fit() -> None:
    assert refusal(Followed(1260, None, None), SECOND, 5000) is None
    reason = refusal(Followed(1260, None, None), SECOND, 5)
    assert reason is not None
    assert "beyond the last message" in reason


def test_the_identity_is_the_name_and_the_creation_time_as_the_server_reports_it() -> None:
    state = {"messages": 0, "bytes": 0, "first_seq": 0, "last_seq": 0, "consumer_count": 0}
    info = api.StreamInfo.from_response(
        {
            "config": {"name": "SPADES_GAMES"},
            "state": state,
            "created": "2025-03-04T03:06:07.891234567Z",
        }
    )
    identity = StreamIdentity.of(info)
    assert identity == StreamIdentity("SPADES_GAMES", "2025-03-04T03:06:07.891234+00:00")
    assert str(identity) == "SPADES_GAMES (created 2025-03-04T03:06:07.891234+00:00)"


def test_readiness_names_each_cause_once_with_the_command_that_fixes_it() -> None:
    reason = refusal(Followed(9, FIRST, None), SECOND, 2)
    assert reason is not None
    report = {
        "games": WorkerLag("games", 9, 2, reason),
        "hands": WorkerLag("hands", 9, 2, reason),
        "players": WorkerLag("players", 0, 2),
    }
    assert refusals(report) == (
        f"read models games, hands: {reason}. Run `{REBUILD_COMMAND}` to rebuild from the stream"
    )
    assert refusals({"players": report["players"]}) is None
