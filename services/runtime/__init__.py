"""Shared runtime of every Spades process: settings, logging, NATS connection, embedded server."""
