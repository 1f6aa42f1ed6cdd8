"""Shared runtime of every Spades process, below every service package.

Settings, logging, the NATS connection and the embedded server, broker credentials; the event
stores (:mod:`.event_store`: the protocol, on JetStream; :mod:`.memory_store`: in memory), the
game and league streams and caches, and the follower that keeps a cache current; the engine
client (:mod:`.engine_client`) the gateway sends commands with; the durable consumers and stream
identity the projection and webhook workers follow the streams with; the rules of webhook
addresses and signatures the gateway and the webhooks worker both apply. It imports no other
``services`` package (``tests/unit/test_imports.py``).
"""
