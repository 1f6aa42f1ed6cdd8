"""Benchmarks, run by ``spades bench``; never part of the timed test suite."""
