"""Any JSON body gives a ScreenedRequest or a ScreeningError, never another exception."""

from __future__ import annotations

import copy
import json
import random

import pytest

from horde.oai.screening import ScreeningError, screen_chat_request
from tests.support.fuzz import mutate, random_json
from tests.support.screening import (
    STRICT_OK,
    function_tool,
    json_schema_format,
    make_body,
    screen,
    tool_answer,
    tool_round,
)


def rich_body():
    return make_body(
        messages=[
            {"role": "system", "content": "json"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                ],
            },
            tool_round(("a",)),
            tool_answer("a"),
        ],
        tools=[function_tool(parameters=copy.deepcopy(STRICT_OK), strict=True)],
        tool_choice="auto",
        parallel_tool_calls=True,
        max_tokens=64,
        temperature=0.5,
        stop=["x"],
        stream=True,
        stream_options={"include_usage": True},
        seed=3,
        reasoning_effort="low",
        response_format=json_schema_format(copy.deepcopy(STRICT_OK), strict=True),
        horde={"only": ["w"], "openai_guards": True},
        logprobs=False,
    )


def assert_screens_or_refuses(body):
    try:
        screened = screen_chat_request(body)
    except ScreeningError as error:
        assert isinstance(error.message, str) and error.message
        assert error.status in (400, 404)
        assert error.param is None or isinstance(error.param, str)
        return
    json.dumps(screened.native)  # the native request is plain JSON


def test_the_rich_body_is_accepted():
    assert screen(rich_body()).native["tool_choice"] == "auto"


@pytest.mark.parametrize("seed", range(20))
def test_fuzz_random_json_bodies(seed):
    rng = random.Random(seed)
    for _ in range(150):
        assert_screens_or_refuses(random_json(rng))
        extra = random_json(rng, 4)
        body = {"model": "m", "messages": [random_json(rng)]}
        body.update(extra if isinstance(extra, dict) else {})
        assert_screens_or_refuses(body)


@pytest.mark.parametrize("seed", range(20))
def test_fuzz_mutated_valid_bodies(seed):
    rng = random.Random(1000 + seed)
    for _ in range(150):
        body = rich_body()
        for _ in range(rng.randint(1, 3)):
            body = mutate(rng, body)
        assert_screens_or_refuses(body)


def test_deeply_nested_json_anywhere_is_handled():
    deep = "x"
    for _ in range(300):
        deep = [deep]
    for body in (
        make_body(messages=[{"role": "user", "content": deep}]),
        make_body(tools=[function_tool(parameters={"type": "object", "default": deep})]),
        make_body(horde={"only": deep}),
        make_body(stop=deep),
        deep,
    ):
        assert_screens_or_refuses(body)
