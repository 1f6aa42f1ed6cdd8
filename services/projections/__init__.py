"""Projection workers: the read models the gateway serves, built from the game stream.

One worker per read model (:mod:`.games`, :mod:`.scoreboard`, :mod:`.hands`, :mod:`.players`,
:mod:`.standings`), each on its own durable JetStream consumer
(:mod:`services.runtime.consumer`), writing each batch of commits and the stream position it
reached in one database transaction (:mod:`.worker`), on SQLite or PostgreSQL through the shared
read-model database (:mod:`services.store`). Messages it cannot apply are parked
(:mod:`.parking`); any model can be rebuilt from the stream (:mod:`.rebuild`); lag and metrics
for ``readyz`` and ``/metrics`` are in :mod:`services.store.lag`, and the gateway reads through
:mod:`services.store.queries`. A process runs the workers with
:func:`.service.run_projections`; only the CLI imports this package.
"""
