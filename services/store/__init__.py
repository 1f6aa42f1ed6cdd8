"""The read-model database, shared by the services that write it and those that read it.

Its connection and transactions (:mod:`.database`), tables (:mod:`.schema`) and migrations
(:mod:`.migrations`); the queries the gateway answers from (:mod:`.queries`); where each read
model stands in the stream and how far it lags (:mod:`.positions`, :mod:`.lag`,
:mod:`.metrics`); league ratings (:mod:`.ratings`); the platforms' webhook endpoints and
their delivery log (:mod:`.webhook_endpoints`).
"""
