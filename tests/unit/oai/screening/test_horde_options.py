"""Screening of the horde object (horde/oai/screening/horde_options.py)."""

from __future__ import annotations

import pytest

from tests.support.screening import (
    BAD,
    UNSUPPORTED,
    assert_refused,
    make_body,
    screen,
)


@pytest.mark.parametrize("key", ["dry_run", "operation_key", "priority", "models", "Only"])
def test_unknown_horde_keys_are_refused(key):
    assert_refused(make_body(horde={key: True}), UNSUPPORTED, f"horde.{key}", f"Unknown parameter: 'horde.{key}'.")


@pytest.mark.parametrize(
    "key,value,message",
    [
        ("only", "worker-1", "Invalid type for 'horde.only': expected an array of strings, but got a string instead."),
        (
            "only",
            [],
            "Invalid 'horde.only': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead.",
        ),
        ("only", [1], None),
        ("only", [""], None),
        (
            "trusted_workers",
            "yes",
            "Invalid type for 'horde.trusted_workers': expected a boolean, but got a string instead.",
        ),
        ("trusted_workers", 1, None),
        (
            "context_fitting",
            "shrink",
            "Invalid value: 'shrink'. Supported values are: 'truncate_oldest', 'grow', and 'reject'.",
        ),
        ("context_fitting", 1, None),
        (
            "max_kudos",
            0,
            "Invalid 'horde.max_kudos': integer below minimum value. Expected a value >= 1, but got 0 instead.",
        ),
        ("max_kudos", -5, None),
        ("max_kudos", 1.5, "Invalid type for 'horde.max_kudos': expected an integer, but got a decimal instead."),
        ("max_kudos", True, None),
        ("max_kudos", "10", None),
        ("include_reasoning", "false", None),
        ("conformance", "loose", "Invalid value: 'loose'. Supported values are: 'strict' and 'best_effort'."),
        ("openai_guards", 0, None),
        ("availability_mode", "later", "Invalid value: 'later'. Supported values are: 'fail_fast' and 'wait'."),
    ],
)
def test_horde_option_value_refusals(key, value, message):
    assert_refused(make_body(horde={key: value}), BAD, f"horde.{key}", message)


@pytest.mark.parametrize("horde", ["fast", [], 1, None, True])
def test_horde_must_be_an_object(horde):
    assert_refused(make_body(horde=horde), BAD, "horde")


def test_the_first_bad_horde_key_in_body_order_is_reported():
    assert_refused(make_body(horde={"conformance": "x", "dry_run": True}), BAD, "horde.conformance")
    assert_refused(make_body(horde={"dry_run": True, "conformance": "x"}), UNSUPPORTED, "horde.dry_run")


def test_horde_options_go_into_native_with_defaults():
    native = screen(make_body()).native
    assert {key: native[key] for key in ("trusted_workers", "context_fitting", "conformance", "availability_mode")} == {
        "trusted_workers": False,
        "context_fitting": "truncate_oldest",
        "conformance": "strict",
        "availability_mode": "fail_fast",
    }
    assert "only" not in native and "max_kudos" not in native


def test_horde_options_sent_are_forwarded():
    horde = {
        "only": ["w1", "w2"],
        "trusted_workers": True,
        "context_fitting": "reject",
        "max_kudos": 40,
        "include_reasoning": False,
        "conformance": "best_effort",
        "openai_guards": True,
        "availability_mode": "wait",
    }
    screened = screen(make_body(horde=horde))
    assert screened.include_reasoning is False
    for key in ("only", "trusted_workers", "context_fitting", "max_kudos", "conformance", "availability_mode"):
        assert screened.native[key] == horde[key]
    assert "include_reasoning" not in screened.native and "openai_guards" not in screened.native


def test_horde_options_sent_as_null_take_their_defaults():
    screened = screen(make_body(horde={"include_reasoning": None, "only": None, "conformance": None}))
    assert screened.include_reasoning is True
    assert screened.native["conformance"] == "strict" and "only" not in screened.native
