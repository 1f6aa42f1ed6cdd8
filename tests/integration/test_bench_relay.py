"""``spades bench commands``'s floor against a real nats-server: the bare relay appends each
request to its table's subject with the engine's optimistic concurrency and replies with the
acknowledged sequence, in its own process, and its figures come from what it answered."""

from __future__ import annotations

import pytest

from benchmarks import relay
from benchmarks.commands import Broker, _relay, relay_process
from services.runtime.nats_server import EmbeddedNats
from services.runtime.replies import Replies

pytestmark = pytest.mark.integration


async def test_the_relay_appends_each_request_after_its_tables_last_and_replies_its_sequence(
    nats_server: EmbeddedNats,
) -> None:
    broker = Broker(nats_server.url, nats_server.credentials_for)
    connection = await broker.connect()
    js = connection.jetstream()
    await js.add_stream(relay.stream_config())
    replies = Replies(connection)
    try:
        with relay_process(broker, 300):
            answers = [
                (await replies.request(relay.request_subject(table), b"{}", timeout_s=10)).data
                for table in (1, 2, 1, 1)
            ]
        # a refused append (a wrong expected sequence) would be acknowledged with sequence 0
        assert [int(answer.split(b":")[0]) for answer in answers] == [1, 2, 3, 4]
        assert {len(answer) for answer in answers} == {2 + relay.REPLY_BYTES}
        info = await js.stream_info(relay.STREAM, subjects_filter=">")
        assert info.state.subjects == {f"{relay.STORED}.1": 3, f"{relay.STORED}.2": 1}
        stored = await js.get_msg(relay.STREAM, 3)
        assert len(stored.data or b"") == 300
        assert stored.headers is not None
        assert stored.headers["Nats-Msg-Id"] == "1:3"
    finally:
        await connection.close()


async def test_the_relays_figures_count_every_request_and_the_cpu_of_each_process(
    nats_server: EmbeddedNats,
) -> None:
    # enough requests that the relay spends more than a clock tick (10 ms) of CPU on them
    rate, cpu = await _relay(Broker(nats_server.url, nats_server.credentials_for), 4, 1000, 300)
    assert rate > 0
    assert {"relay", "nats-server", "client"} <= set(cpu)
    assert cpu["relay"] > 0
