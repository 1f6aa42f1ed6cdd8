"""Bots: players for every preset that see only what a seat sees through the public API."""
