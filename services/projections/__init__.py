"""Projection workers: the read models the gateway serves, built from the game stream.

The read models (:mod:`.games`, :mod:`.scoreboard`, :mod:`.hands`, :mod:`.players`,
:mod:`.standings`) share one worker and one durable JetStream consumer
(:mod:`services.runtime.consumer`) while they stand together in the stream (a model being
rebuilt catches up on a worker of its own), and each batch of commits goes into all of them, with
the stream position each reached, in one database transaction (:mod:`.worker`, :mod:`.service`),
on SQLite or PostgreSQL through the shared read-model database (:mod:`services.store`).
Messages a model cannot apply are parked (:mod:`.parking`); any model can be rebuilt from the
stream (:mod:`.rebuild`); lag and metrics for ``readyz`` and ``/metrics`` are in
:mod:`services.store.lag`, and the gateway reads through :mod:`services.store.queries`. A process
runs the workers with :func:`.service.run_projections`; only the CLI imports this package.
"""
