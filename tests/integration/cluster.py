"""A three-node nats-server cluster on loopback for the tests that need one (each node its own
process, store and ports, routed to the other two), with JetStream healthy on all of them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from contracts.partitions import ONE, Partitions
from services.runtime.nats_server import EmbeddedNats, free_ports
from tests.integration.support import broker_credentials

NODES = 3


@contextlib.contextmanager
def three_nodes(root: Path, partitions: Partitions = ONE) -> Iterator[list[EmbeddedNats]]:
    ports = free_ports(3 * NODES)
    clients, monitors, routes = ports[:NODES], ports[NODES : 2 * NODES], ports[2 * NODES :]
    nodes = [
        EmbeddedNats(
            root / f"nats-{n}",
            port=clients[n],
            http_port=monitors[n],
            server_name=f"nats-{n}",
            cluster_port=routes[n],
            routes=[f"nats-route://127.0.0.1:{port}" for port in routes if port != routes[n]],
            credentials=broker_credentials(),
            partitions=partitions,
        )
        for n in range(NODES)
    ]
    try:
        for node in nodes:
            node.start()
        for node in nodes:
            node.wait_until_healthy()
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def cluster_url(nodes: list[EmbeddedNats]) -> str:
    """Every node, as a client lists a cluster."""
    return ",".join(node.url for node in nodes)
