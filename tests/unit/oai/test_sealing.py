"""Sealed reasoning opens only unaltered, for the user and purpose it was sealed for (horde/oai/sealing.py)."""

from __future__ import annotations

import base64

import pytest

from horde.oai import sealing

KEY = sealing.derive_key(b"a test secret of some length")
TEXT = "The user wants a listing; exec_command can do it."


def test_a_sealed_text_opens_for_its_user_and_hides_the_text():
    token = sealing.seal(KEY, 7, sealing.REASONING, TEXT)
    assert sealing.open_sealed(KEY, 7, sealing.REASONING, token) == TEXT
    assert "listing" not in base64.urlsafe_b64decode(token).decode(errors="replace")
    assert sealing.seal(KEY, 7, sealing.REASONING, TEXT) != token  # a fresh nonce each time


@pytest.mark.parametrize(
    "how",
    ["another user", "another purpose", "another key", "a flipped bit", "cut short", "not base64", "empty"],
)
def test_anything_else_does_not_open(how):
    token = sealing.seal(KEY, 7, sealing.REASONING, TEXT)
    raw = bytearray(base64.urlsafe_b64decode(token))
    raw[-5] ^= 0x01
    key, user, purpose = KEY, 7, sealing.REASONING
    attempt = {
        "another user": token,
        "another purpose": token,
        "another key": token,
        "a flipped bit": base64.urlsafe_b64encode(bytes(raw)).decode(),
        "cut short": token[:20],
        "not base64": "~~~~",
        "empty": "",
    }[how]
    if how == "another user":
        user = 8
    elif how == "another purpose":
        purpose = "other"
    elif how == "another key":
        key = sealing.derive_key(b"another secret")
    with pytest.raises(sealing.SealBroken):
        sealing.open_sealed(key, user, purpose, attempt)


def test_the_key_comes_from_the_secret_alone():
    assert sealing.derive_key(b"s") == sealing.derive_key(b"s") != sealing.derive_key(b"t")
    assert len(sealing.derive_key(b"s")) == sealing.KEY_BYTES
