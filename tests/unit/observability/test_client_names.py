"""The client label of horde_client_requests_total: a Client-Agent's name, among a bounded number of names."""

from __future__ import annotations

import pytest

from horde.observability.metrics import CLIENT_NAME_MAX_CHARS, OTHER_CLIENTS, ClientNames, client_name


@pytest.mark.parametrize(
    ("agent", "name"),
    [
        ("KoboldAiLite:17", "KoboldAiLite"),
        ("SillyTavern:1.12.0:Cohee#1207", "SillyTavern"),
        ("horde-sdk", "horde-sdk"),
        ("  spaced :1:x", "spaced"),
        ("", "unknown"),
        (None, "unknown"),
        (":1:x", "unknown"),
        ("bell\x07and\nnewline:1", "bellandnewline"),
        ("x" * 500 + ":1:y", "x" * CLIENT_NAME_MAX_CHARS),
    ],
)
def test_the_name_is_the_first_part_printable_and_bounded(agent, name):
    assert client_name(agent) == name


def test_names_past_the_limit_are_counted_as_other_and_the_first_ones_stay():
    names = ClientNames(limit=2)
    assert [names.label(agent) for agent in ("a:1", "b:1", "c:1", "a:2", "d:1", "b:9")] == [
        "a",
        "b",
        OTHER_CLIENTS,
        "a",
        OTHER_CLIENTS,
        "b",
    ]
