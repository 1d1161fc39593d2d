"""What a kudos move adds to its user's row, and how the AI Horde's `name#id` is read."""

from __future__ import annotations

import pytest

from horde.accounts.moves import TOTALS, Kind, Move, deltas, net_by_user
from horde.accounts.names import ANONYMOUS_PUBLIC_ID, alias, id_in_alias


def test_each_kind_adds_to_its_total_and_charges_and_rewards_count_a_generation():
    assert deltas(Move(1, -3, Kind.CHARGE, 40)) == {
        "kudos": -3,
        "kudos_accumulated": -3,
        "kudos_gifted": 0,
        "kudos_received": 0,
        "kudos_admin": 0,
        "kudos_awarded": 0,
        "requested_generations": 1,
        "requested_tokens": 40,
        "fulfilled_generations": 0,
        "fulfilled_tokens": 0,
    }
    assert deltas(Move(2, 3, Kind.REWARD, 40))["fulfilled_generations"] == 1
    assert deltas(Move(1, -10, Kind.GIFTED))["kudos_gifted"] == -10
    assert deltas(Move(2, 10, Kind.RECEIVED))["kudos_received"] == 10
    assert deltas((1, 5, "grant"))["kudos_admin"] == deltas((1, 5, "adjustment"))["kudos_admin"] == 5
    assert deltas(Move(2, 7, Kind.AWARD))["kudos_awarded"] == 7  # a moderator's award (POST /kudos/award)
    assert set(deltas(Move(1, 1, Kind.GRANT))) == {"kudos", *TOTALS}


def test_a_user_on_both_sides_changes_once_by_the_net_amounts():
    """A worker's owner served its own request: its balance nets to zero, its records count both sides."""
    net = net_by_user([Move(7, -4, Kind.CHARGE, 20), Move(7, 4, Kind.REWARD, 20)])
    assert list(net) == [7]
    assert net[7]["kudos"] == net[7]["kudos_accumulated"] == 0
    assert (net[7]["requested_generations"], net[7]["fulfilled_generations"]) == (1, 1)
    assert (net[7]["requested_tokens"], net[7]["fulfilled_tokens"]) == (20, 20)
    assert list(net_by_user([Move(9, 1, Kind.REWARD), Move(3, -1, Kind.CHARGE)])) == [3, 9]  # id order


@pytest.mark.parametrize(
    ("name", "public"),
    [
        ("alice#12", 12),
        ("x#12", 12),
        ("12", 12),
        ("we#ird#name#5", 5),
        ("Anonymous#0", ANONYMOUS_PUBLIC_ID),
        ("alice", None),
        ("alice#", None),
        ("alice#-3", None),
        ("alice#1.5", None),
        ("alice#٣", None),  # a decimal digit, but not ASCII
        ("alice#2147483648", None),  # above any users row's id
        ("alice#" + "9" * 40, None),
    ],
)
def test_the_number_after_the_last_hash_names_the_user(name, public):
    assert id_in_alias(name) == public


def test_the_anonymous_user_is_anonymous_0_whatever_its_row_id():
    assert alias("Anonymous", 1, anonymous=True) == "Anonymous#0"
    assert alias("alice", 12, anonymous=False) == "alice#12"
