"""Audit by replay: check a game's record and settle a disputed hand from it (a library of the
CLI and the gateway, in the shared layer: it imports only :mod:`services.runtime`).

- :mod:`.replay`: :func:`~.replay.audit_game`, a game's stored commits decided again by the
  rules, event by event (the HTTP audit and ``spades audit GAME_ID``);
- :mod:`.history`, :mod:`.deals`: the hash chain and versions, and each deal against its seed;
- :mod:`.read_model_check`: the scoreboard and hand records against the replay;
- :mod:`.disputes`: findings in words, each with the rule that decided it;
- :mod:`.hand_record`, :mod:`.record_file`, :mod:`.table_replay`: hands played elsewhere;
- :mod:`.verify`: kept receipts, hand records and consistency proofs checked offline against the
  audit log's keys (``spades verify``);
- :mod:`.render`: one hand told in a terminal; :mod:`.commit_file`: a copy of a game's record.
"""
