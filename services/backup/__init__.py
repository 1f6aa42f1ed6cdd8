"""Backups that restore: the event streams, the truth, and what cannot be derived from them.

``spades backup DIR`` copies every message of every stream (:data:`.deployment.STREAMS`) as it
is stored: its sequence, subject, headers and bytes (:mod:`.stream_copy`), then each thing that
lives outside the streams (:data:`.outside.OUTSIDE_THE_STREAM`), then a manifest naming them all
with their digests (:mod:`.manifest`). ``spades backup DIR --since BACKUP`` writes an increment
of that earlier backup: of each stream only the messages after those it copied, and only if the
stream is the very one it copied (:mod:`.chain`); what lives outside is small and copied whole.
``spades restore BASE [INCREMENT ...]`` checks every digest, each increment against the backup
before it, and the target, publishes the messages into empty streams in their order, each
landing at the sequence it had, and puts back what lives outside as the last backup holds it.
Read models are not in a backup: the projection workers rebuild them from the restored streams.

Why an export of the stored messages rather than JetStream's own snapshot: the copy is the
messages themselves, checked message by message on the way in (every publish must land at the
sequence it had, with its original headers, so the engine's optimistic-concurrency headers are
checked again), readable with ``jq`` and independent of the server's file format, version and
cluster layout: a single node's backup restores into a three-node cluster at R3. nats-py has no
snapshot API either. The price: the restored stream stores each message at the
time of the restore (nothing reads those times: commits carry their own), and the stream is
made anew, so a read-model database kept from before refuses it until rebuilt.
"""
