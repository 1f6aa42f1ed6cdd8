"""``spades witness``: a witness of audit logs (C2SP ``tlog-witness``), run with a key of its
own, possibly by another party. It cosigns a log's checkpoint only if the log signed it and
it extends the last checkpoint of that log the witness cosigned."""
