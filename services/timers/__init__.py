"""The timer worker: fires each turn's timeout through the engine when the seat's clock runs
out (:mod:`services.timers.worker`)."""
