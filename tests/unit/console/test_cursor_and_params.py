"""The ledger's cursor (signed, naming its user) and the console's bounded query parameters, without a database."""

from __future__ import annotations

import datetime as dt

import pytest

from horde import errors
from horde.console import cursor as cursors
from horde.console.params import bounded


class _Database:
    """Stands for the database only as the key's cache entry: a configured secret is never read from it."""


def _round_trip(secret: str, position: cursors.Cursor, user_id: int) -> cursors.Cursor:
    db = _Database()
    return cursors.decode(db, secret, cursors.encode(db, secret, position), user_id)


def test_a_cursor_comes_back_as_it_was_given():
    position = cursors.Cursor(7, dt.datetime(2026, 12, 7, 4, 1, 2, 345678), 812, -40)
    assert _round_trip("a secret", position, 7) == position


def test_a_cursor_signed_with_another_secret_or_for_another_user_is_refused():
    position = cursors.Cursor(7, dt.datetime(2026, 12, 7), 812, 100)
    given = cursors.encode(_Database(), "a secret", position)
    for secret, user_id in (("another secret", 7), ("a secret", 8)):
        with pytest.raises(errors.BadRequest) as refused:
            cursors.decode(_Database(), secret, given, user_id)
        assert refused.value.param == "cursor"


def test_an_edited_balance_is_refused():
    db = _Database()
    given = cursors.encode(db, "s", cursors.Cursor(7, dt.datetime(2026, 12, 7), 812, 100))
    body, mac = given.split(".")
    other = cursors.encode(db, "s", cursors.Cursor(7, dt.datetime(2026, 12, 7), 812, 999_999)).split(".")[0]
    with pytest.raises(errors.BadRequest):
        cursors.decode(db, "s", f"{other}.{mac}", 7)
    assert cursors.decode(db, "s", f"{body}.{mac}", 7).balance == 100


@pytest.mark.parametrize(("raw", "expected"), [(None, 30), ("", 30), ("1", 1), ("90", 90), ("007", 7)])
def test_a_bounded_parameter_within_its_bounds(raw, expected):
    args = {} if raw is None else {"days": raw}
    assert bounded(args, "days", 30, 1, 90) == expected


@pytest.mark.parametrize("raw", ["0", "91", "-1", "1.0", "x", "١٢", "9" * 10, " 5"])
def test_a_bounded_parameter_out_of_bounds_names_itself(raw):
    with pytest.raises(errors.BadRequest) as refused:
        bounded({"days": raw}, "days", 30, 1, 90)
    assert refused.value.param == "days"
