"""The integrity report as the gateway answers it: from the read model's facts, flagged signals
first, each flagged one with its hands and their replay pages, and no card anywhere."""

from __future__ import annotations

import json

import msgspec

from benchmarks.integrity import COLLUDERS, play_league
from contracts.leagues import IntegrityReport
from services.gateway.league_views import integrity_answer
from services.integrity.signals import hand_facts


def test_a_flagged_pair_names_its_hands_and_their_replays_and_no_card() -> None:
    hands = play_league(3, 40, seed=7, strength=1.0)
    report = integrity_answer("l1", [hand_facts(hand) for hand in hands])
    answer = msgspec.to_builtins(report)
    assert msgspec.convert(answer, IntegrityReport) == report
    assert answer["hands"] == len(hands)
    signals = answer["signals"]
    flagged = [signal for signal in signals if signal["flagged"]]
    assert flagged
    assert signals[: len(flagged)] == flagged, "flagged signals come first"
    assert any(sorted(signal["players"]) == list(COLLUDERS) for signal in flagged)
    played = {(hand.game_id, hand.record.hand) for hand in hands}
    for signal in signals:
        assert bool(signal["evidence"]) == signal["flagged"]
        for where in signal["evidence"]:
            assert (where["game_id"], where["hand"]) in played
            assert where["replay"] == f"/replay/{where['game_id']}?hand={where['hand']}"
    text = json.dumps(answer)
    cards = {card.value for hand in hands for held in hand.record.deal.hands for card in held}
    assert len(cards) == 51  # the whole pack of three seats (cutthroat leaves the 2C out)
    assert not [card for card in cards if f'"{card}"' in text]
