"""Platform keys and seat tokens without a server: who a key names, what a token grants, and
that neither can be forged or stretched."""

from __future__ import annotations

import pytest

from services.gateway import auth
from services.gateway.auth import PlatformKeys, SeatTokens
from services.gateway.json_text import _escapes_surrogate, has_lone_surrogate, is_utf8_text
from services.runtime.settings import bare_key_platform, parse_api_keys


def test_keys_name_their_platforms_several_keys_one_platform() -> None:
    keys = parse_api_keys(" acme:k1, acme:k2 ,rival:k3,bare-key,, ")
    assert keys == {
        "k1": "acme",
        "k2": "acme",
        "k3": "rival",
        "bare-key": bare_key_platform("bare-key"),
    }
    assert bare_key_platform("bare-key").startswith("key-")
    assert "bare" not in bare_key_platform("bare-key")
    platforms = PlatformKeys(keys)
    assert platforms.required
    assert [platforms.platform_of(k) for k in ("k1", "k2", "k3", "k4", "")] == [
        "acme",
        "acme",
        "rival",
        None,
        None,
    ]
    assert not PlatformKeys({}).required


@pytest.mark.parametrize("text", ["a b:s3cr3t", "acme:", ":s3cr3t", "é:s3cr3t"])
def test_a_bad_entry_is_refused_without_echoing_a_key(text: str) -> None:
    with pytest.raises(ValueError, match="SPADES_API_KEYS") as refused:
        parse_api_keys(text)
    assert "s3cr3t" not in str(refused.value)


def test_a_token_grants_its_seat_issue_and_expiry_and_nothing_altered() -> None:
    tokens = SeatTokens(b"k" * 32, ttl_s=60, clock=lambda: 1000.0)
    issued = tokens.issue("g1", 2, 3)
    grant = tokens.read(issued.token)
    assert grant is not None
    assert (grant.game_id, grant.seat, grant.issue, grant.expires) == ("g1", 2, 3, 1060)
    assert issued.expires_at == "1970-01-01T00:17:40Z"
    assert not grant.expired(1059.9)
    assert grant.expired(1060)
    body, _, mac = issued.token.rpartition(".")
    parts = body.split(".")
    for field, value in ((2, "1"), (3, "4"), (4, "99999")):  # another seat, issue, expiry
        altered = ".".join([*parts[:field], value, *parts[field + 1 :]])
        assert tokens.read(f"{altered}.{mac}") is None
    assert SeatTokens(b"x" * 32, ttl_s=60).read(issued.token) is None  # another service's key
    assert tokens.read(issued.token.replace("st2.", "st1.", 1)) is None


def test_verified_tokens_are_kept_and_only_those_and_no_more_than_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(auth, "VERIFIED_KEPT", 3)
    tokens = SeatTokens(b"k" * 32, ttl_s=60, clock=lambda: 1000.0)
    issued = [tokens.issue("g1", seat, 1).token for seat in range(4)]
    first = tokens.read(issued[0])
    assert first is not None
    assert tokens.read(issued[0]) is first  # kept: not verified again
    forged = issued[0][:-2] + ("AA" if not issued[0].endswith("AA") else "BB")
    assert tokens.read(forged) is None  # a kept token's grant is not another token's
    assert tokens.read(forged) is None  # and a refusal is not kept as a grant
    for token in issued[1:]:
        assert tokens.read(token) is not None
    assert len(tokens._read) == 3  # the bound: the oldest went first
    assert issued[0] not in tokens._read
    assert tokens.read(issued[0]) == first  # verified again, the same grant


def test_a_lone_surrogate_is_found_anywhere_in_a_json_value() -> None:
    assert not has_lone_surrogate({"a": ["b", {"c": "\U0001f0a1"}], "d": 1})
    assert has_lone_surrogate({"a": ["b", {"c": "\ud800"}]})
    assert has_lone_surrogate({"\udfff": 1})
    assert has_lone_surrogate(["x", "\ude00\ud83d"])


@pytest.mark.parametrize(
    ("body", "escapes"),
    [
        (b'{"a":"\\ud800"}', True),
        (b'{"a":"\\uD83D\\uDE00"}', True),
        (b'{"a":"\\udfff"}', True),
        (b'{"\\udc00":1}', True),
        (b'{"a":"\\ud7ff"}', False),
        (b'{"a":"\\ue000"}', False),
        (b'{"a":"\\u0041"}', False),
        (b'{"a":"ud800"}', False),
        (b'{"type":"play","card":"AS","expected_version":12}', False),
    ],
)
def test_the_cheap_look_finds_every_surrogate_escape_and_no_other(
    body: bytes, escapes: bool
) -> None:
    assert _escapes_surrogate(body) is escapes


@pytest.mark.parametrize(
    ("body", "text"),
    [
        (b'{"a":"b"}', True),
        (b"", True),
        ('{"a":"ace \U0001f0a1 caf\u00e9"}'.encode(), True),
        (b'{"a":"\xed\xa0\x80"}', False),  # a surrogate's own bytes
        (b'{"a":"\xff"}', False),
        ('{"a":"b"}'.encode("utf-16-le"), False),
        ('{"a":"b"}'.encode("utf-16"), False),
        ('{"a":"b"}'.encode("utf-32-be"), False),
        (b'{"a":"b\x00"}', False),
    ],
)
def test_a_body_is_text_only_as_strict_utf8_without_a_nul(body: bytes, text: bool) -> None:
    assert is_utf8_text(body) is text
