"""Webhooks: platforms hear of their games and leagues without polling (Standard Webhooks 1.0).

``spades serve webhooks`` runs :func:`services.webhooks.service.run_webhooks`, as many of them as
the load needs: followers of the game partitions and of the league stream, shared between the
processes, turn commits into pending deliveries in the read-model database (:mod:`.ingest`,
:mod:`.outbox`; only commits a platform's endpoints may want, by :mod:`.interest`), and each
process's delivery loop claims and sends them, signed, in order per endpoint and game or league,
retried with backoff (:mod:`.delivery`); :mod:`.metrics` is what they tell Prometheus. The
gateway registers endpoints (:mod:`services.store.webhook_endpoints`), checking their addresses
and making their secrets with the rules this worker sends by
(:mod:`services.runtime.webhook_addresses`, :mod:`services.runtime.webhook_signing`); only the
CLI imports this package.
"""
