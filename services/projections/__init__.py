"""Projection workers: the read models the gateway serves, built from the game stream.

The read models (:mod:`.games`, :mod:`.scoreboard`, :mod:`.hands`, :mod:`.players`,
:mod:`.standings`) follow each partition of the game stream a process holds as one handler on
the shared follower (:mod:`services.runtime.follower`) while they stand together there (a model
being rebuilt replays the partition on a consumer of its own), and each batch of commits goes
into all of them, with the position each reached in that partition, in one database transaction
(:mod:`.worker`, :mod:`.service`), on SQLite or PostgreSQL through the shared read-model
database (:mod:`services.store`). Processes share the partitions through leases
(:mod:`services.runtime.claims`). Messages a model cannot apply are parked (:mod:`.parking`);
any model can be rebuilt from the stream (:mod:`.rebuild`); lag and metrics for ``readyz`` and
``/metrics`` are in :mod:`services.store.lag`, and the gateway reads through
:mod:`services.store.queries`. A process runs the workers with
:func:`.service.run_projections`; only the CLI imports this package.
"""
