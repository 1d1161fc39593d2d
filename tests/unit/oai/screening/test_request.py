"""Screening of the body and its top-level keys: its type, unknown keys, model and models, the
openai_guards check and the error object (horde/oai/screening/request.py, base.py)."""

from __future__ import annotations

import pytest

from horde.oai.screening import ScreeningError
from tests.support.screening import (
    BAD,
    CONFLICT,
    UNSUPPORTED,
    USER_HI,
    assert_refused,
    json_schema_format,
    make_body,
    screen,
)

# --- The body and top-level keys -------------------------------------------------------------


@pytest.mark.parametrize("body", [[], "text", 1, 1.5, True, None, [make_body()]])
def test_body_must_be_an_object(body):
    error = assert_refused(body, BAD, None)
    assert error.message.startswith("Invalid type for the request body: expected an object")


@pytest.mark.parametrize(
    "key,value",
    [
        ("logit_bias", {"50256": -100}),
        ("functions", [{"name": "f"}]),
        ("function_call", "auto"),
        ("audio", {"voice": "alloy", "format": "mp3"}),
        ("modalities", ["text"]),
        ("prediction", {"type": "content", "content": "x"}),
        ("web_search_options", {}),
        ("rep_pen", 1.1),
        ("top_k", 40),
        ("min_p", 0.05),
        ("metadata", {"a": "b"}),
        ("safety_identifier", "u1"),
        ("verbosity", "low"),
        ("dry_run", True),
        ("operation_key", "k"),
        ("Model", "x"),
    ],
)
def test_unknown_top_level_keys_are_refused_with_the_key_as_param(key, value):
    assert_refused(make_body(**{key: value}), UNSUPPORTED, key, f"Unknown parameter: '{key}'.")


def test_the_first_unknown_key_in_body_order_is_reported():
    body = {"top_k": 1, "model": "m", "messages": [USER_HI], "min_p": 0.1}
    assert_refused(body, UNSUPPORTED, "top_k")


def test_unknown_keys_are_reported_before_a_missing_model():
    assert_refused({"logit_bias": {}}, UNSUPPORTED, "logit_bias")


# --- model and models ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,code,param,message",
    [
        ({"messages": [USER_HI]}, BAD, "model", "Missing required parameter: 'model'."),
        ({"model": None, "messages": [USER_HI]}, BAD, "model", "Missing required parameter: 'model'."),
        ({"model": "m"}, BAD, "messages", "Missing required parameter: 'messages'."),
        ({"model": "m", "messages": None}, BAD, "messages", "Missing required parameter: 'messages'."),
        ({"model": "m", "models": ["m"], "messages": [USER_HI]}, CONFLICT, "models", None),
        (
            {"model": 5, "messages": [USER_HI]},
            BAD,
            "model",
            "Invalid type for 'model': expected a string, but got an integer instead.",
        ),
        ({"model": "", "messages": [USER_HI]}, BAD, "model", None),
        (
            {"models": "m", "messages": [USER_HI]},
            BAD,
            "models",
            "Invalid type for 'models': expected an array, but got a string instead.",
        ),
        ({"models": [], "messages": [USER_HI]}, UNSUPPORTED, "models", None),
        (
            {"models": ["a", "b", "c", "d", "e", "f"], "messages": [USER_HI]},
            UNSUPPORTED,
            "models",
            "Invalid 'models': array too long. Expected an array with maximum length 5, "
            "but got an array with length 6 instead.",
        ),
        ({"models": ["a", ""], "messages": [USER_HI]}, UNSUPPORTED, "models", None),
        ({"models": ["a", 3], "messages": [USER_HI]}, UNSUPPORTED, "models", None),
        ({"models": [None], "messages": [USER_HI]}, UNSUPPORTED, "models", None),
    ],
)
def test_model_and_models_refusals(body, code, param, message):
    assert_refused(body, code, param, message)


@pytest.mark.parametrize(
    "body,param,model",
    [
        (make_body(model="llama3:8b"), "model", "llama3:8b"),
        ({"models": ["a/b", "c:d"], "messages": [USER_HI]}, "models[1]", "c:d"),
        ({"models": ["x:1", "c:d"], "messages": [USER_HI]}, "models[0]", "x:1"),
    ],
)
def test_a_model_variant_is_404_model_not_found(body, param, model):
    assert_refused(
        body,
        "model_not_found",
        param,
        f"The model `{model}` does not exist or you do not have access to it.",
        status=404,
    )


def test_models_list_is_kept_in_order_and_model_param_reported():
    screened = screen({"models": ["org/a", "org/b"], "messages": [USER_HI]})
    assert screened.native["models"] == ["org/a", "org/b"]
    assert screened.model_param == "models"
    screened = screen(make_body(model="org/with/slashes"))
    assert screened.native["models"] == ["org/with/slashes"]
    assert screened.model_param == "model"


# --- openai_guards ----------------------------------------------------------------------------------------

JSON_WORD = "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."


def test_openai_guards_refuse_json_object_without_the_word_json():
    body = make_body(response_format={"type": "json_object"}, horde={"openai_guards": True})
    assert_refused(body, BAD, "messages", JSON_WORD)


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "system", "content": "Reply in JSON."}, USER_HI],
        [{"role": "user", "content": [{"type": "text", "text": "give me json"}]}],
        [{"role": "developer", "content": "Use a JsOn object"}, USER_HI],
    ],
)
def test_openai_guards_accept_a_mention_of_json(messages):
    body = make_body(messages=messages, response_format={"type": "json_object"}, horde={"openai_guards": True})
    assert screen(body).native["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize(
    "keys",
    [
        {"response_format": {"type": "json_object"}},
        {"response_format": {"type": "json_object"}, "horde": {"openai_guards": False}},
        {"response_format": json_schema_format({"type": "object"}), "horde": {"openai_guards": True}},
    ],
)
def test_without_guards_or_json_object_the_word_is_not_needed(keys):
    assert screen(make_body(**keys))


# --- The error object ------------------------------------------------------------------------------------


def test_screening_error_defaults_and_attributes():
    error = ScreeningError("no")
    assert (error.message, error.status, error.code, error.param) == ("no", 400, "UnsupportedChatParameter", None)
    assert str(error) == "no"
    error = ScreeningError("gone", status=404, code="model_not_found", param="model")
    assert (error.status, error.code, error.param) == (404, "model_not_found", "model")
