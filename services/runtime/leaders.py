"""Spreading the partitions' stream leaders over a cluster's nodes.

Each partition is a stream of its own, one Raft group, and its leader takes every write and,
with replicas, every leader read: partitions only spread the load if their leaders sit on
different nodes. The meta leader places a new stream's leader where it likes, and a leader lost
with its node moves to another, so after start-up and after a node comes back several
partitions may be led from one node. :func:`spread` moves each partition's leader to the node it
is assigned (the partitions taken in order, round the nodes that hold its replicas, sorted by
name) with JetStream's own leader step-down and its ``preferred`` placement (nats-server 2.11+):
nothing but the Raft election itself moves a leader. Each partition's node is worked out from
every node that holds a replica, whether it is current or not, so that a replica lagging for a
moment (under load) never moves leaders back and forth; a partition is moved only to a node
that is current.

The engine holding partition 0 runs it at start-up and every :data:`EVERY_S`. A node that is
down or behind is not moved to (its partitions stay where they are until it is back).
"""

from __future__ import annotations

import json

import nats.errors
import nats.js.errors
import structlog
from nats.js import JetStreamContext

from contracts.partitions import Partitions

log = structlog.get_logger("spades.leaders")

EVERY_S = 10.0


async def leaders(js: JetStreamContext, partitions: Partitions) -> dict[int, str | None]:
    """Each partition's leader now (None: it has none, or the stream is not clustered)."""
    found: dict[int, str | None] = {}
    for partition in partitions.indexes:
        info = await js.stream_info(partitions.stream(partition))
        found[partition] = info.cluster.leader if info.cluster is not None else None
    return found


async def spread(js: JetStreamContext, partitions: Partitions) -> dict[int, str]:
    """Ask each partition whose leader is not its assigned node to step down to it; the moves
    asked for (partition: node). A stream of one replica, or a deployment of one partition,
    has nothing to move."""
    if partitions.legacy:
        return {}
    nodes: set[str] = set()
    current: dict[int, tuple[str | None, set[str]]] = {}
    for partition in partitions.indexes:
        info = await js.stream_info(partitions.stream(partition))
        cluster = info.cluster
        if cluster is None or not cluster.replicas:
            return {}
        peers = {r.name for r in cluster.replicas if r.name}
        healthy = {r.name for r in cluster.replicas if r.name and r.current and not r.offline}
        if cluster.leader:
            peers.add(cluster.leader)
            healthy.add(cluster.leader)
        nodes |= peers  # every node, healthy or not: the assignment must not follow a lag
        current[partition] = (cluster.leader, healthy)
    order = sorted(nodes)
    moves: dict[int, str] = {}
    for partition, (leader, healthy) in current.items():
        target = order[partition % len(order)]
        if leader == target or target not in healthy:
            continue
        if await step_down(js, partitions.stream(partition), target):
            moves[partition] = target
    if moves:
        log.info("partition leaders moved", moves=moves)
    return moves


async def step_down(js: JetStreamContext, stream: str, preferred: str) -> bool:
    subject = f"{js._prefix}.STREAM.LEADER.STEPDOWN.{stream}"  # nats-py has no stepdown call
    body = json.dumps({"placement": {"preferred": preferred}}).encode()
    try:
        reply = await js._nc.request(subject, body, timeout=5.0)
    except (nats.errors.Error, TimeoutError) as error:
        log.warning("leader not moved", stream=stream, to=preferred, error=repr(error))
        return False
    answer = json.loads(reply.data or b"{}")
    if "error" in answer:
        log.warning("leader not moved", stream=stream, to=preferred, error=answer["error"])
        return False
    return bool(answer.get("success"))
