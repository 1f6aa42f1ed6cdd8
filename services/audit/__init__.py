"""Audit by replay: check a game's record and settle a disputed hand from it."""
