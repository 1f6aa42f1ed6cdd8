"""Projection workers: the read models the gateway serves, built from the game stream.

One worker per read model (:mod:`.games`, :mod:`.scoreboard`, :mod:`.hands`, :mod:`.players`),
each on its own durable JetStream consumer (:mod:`.consumer`), writing each batch of commits and
the stream position it reached in one database transaction (:mod:`.worker`), on SQLite or
PostgreSQL through one SQLAlchemy Core layer (:mod:`.store`, :mod:`.schema`,
:mod:`.migrations`). Messages it cannot apply are parked (:mod:`.parking`); any model can be
rebuilt from the stream (:mod:`.rebuild`); lag and metrics for ``readyz`` and ``/metrics``
(:mod:`.lag`, :mod:`.metrics`); the gateway reads through :mod:`.queries`. A process runs the
workers with :func:`.service.run_projections`.
"""
