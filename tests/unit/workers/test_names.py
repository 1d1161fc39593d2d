"""Worker names that read alike share a key: case, width, the confusable dashes and spaces, invisible characters."""

from __future__ import annotations

import pytest

from horde.workers.names import name_key


@pytest.mark.parametrize(
    "look_alike",
    [
        "BOB-WORKER-1",
        "bob\u2010worker-1",  # hyphen
        "bob\u2011worker\u20121",  # non-breaking hyphen, figure dash
        "bob\u2013worker\u20141",  # en and em dashes
        "bob\u2212worker-1",  # minus sign
        "bob\uff0dworker-1",  # fullwidth hyphen-minus
        "\uff42\uff4f\uff42-worker-1",  # fullwidth letters
        "bob-wor\u200bker-1",  # a zero-width space inside
        " bob-worker-1 ",
        "Bob-Worker-1\u00ad",  # a soft hyphen at the end
    ],
)
def test_look_alikes_of_a_name_share_its_key(look_alike):
    assert name_key(look_alike) == name_key("bob-worker-1")


def test_spaces_of_every_width_are_one_space_and_case_folding_is_unicode_s():
    assert name_key("my\u00a0worker") == name_key("my  worker") == name_key("MY\u3000WORKER") == "my worker"
    assert name_key("STRAẞE") == name_key("strasse")  # full case folding, not lower()


@pytest.mark.parametrize("other", ["bob-worker-2", "bob_worker-1", "bobworker-1", "bob worker-1", "rob-worker-1"])
def test_names_that_differ_keep_different_keys(other):
    assert name_key(other) != name_key("bob-worker-1")
