"""Prices, the free allowance, and the requirements derived from a request (ADR 0001)."""

import pytest

from horde.chat import pricing, requirements
from horde.workers.declarations import feature_names, guarantee_names

TOOLS = [{"type": "function", "function": {"name": "f"}}]
USER = [{"role": "user", "content": "hi"}]


def test_price_scales_with_size_tokens_and_images():
    base = pricing.price("unknown/model", completion_tokens=500, prompt_tokens=1000)
    assert base == 6  # ceil(1 × (5 + 1))
    assert pricing.price("koboldcpp/Qwen3-32B", completion_tokens=500, prompt_tokens=1000) == 24
    assert pricing.price("unknown/model", completion_tokens=500, prompt_tokens=1000, n_images=2) == base + 10
    assert pricing.price("unknown/model", completion_tokens=0, prompt_tokens=0) == 1


def test_free_allowance_shrinks_with_load():
    assert pricing.free_allowance_tokens(eligible_threads=4, queued_requests=0) == 4096
    assert pricing.free_allowance_tokens(eligible_threads=4, queued_requests=4) == 2048
    assert pricing.free_allowance_tokens(eligible_threads=1, queued_requests=100) == 512
    assert pricing.free_allowance_tokens(eligible_threads=0, queued_requests=0) == 512


@pytest.mark.parametrize(
    "native, features, guarantees",
    [
        ({}, [], []),
        ({"seed": 0}, ["seed"], []),
        ({"reasoning_effort": "none"}, ["reasoning_effort"], []),
        ({"frequency_penalty": 0, "presence_penalty": 0.0}, [], []),
        ({"frequency_penalty": 0.1}, ["frequency_penalty"], []),
        ({"tools": TOOLS}, ["tools"], []),
        ({"tools": TOOLS, "tool_choice": "none"}, [], []),
        ({"tools": TOOLS, "tool_choice": "required"}, ["tools"], ["tool_choice"]),
        ({"tools": TOOLS, "tool_choice": "required", "conformance": "best_effort"}, ["tools"], []),
        ({"response_format": {"type": "json_object"}}, ["json_object"], []),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"strict": True}}},
            ["json_schema"],
            ["schema_adherence"],
        ),
        (
            {"tools": TOOLS, "response_format": {"type": "json_object"}},
            ["tools", "json_object", "tools_with_response_format"],
            [],
        ),
        ({"context_fitting": "reject"}, [], ["prompt_fit"]),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:"}}]}]},
            ["vision"],
            [],
        ),
    ],
)
def test_requirements(native, features, guarantees):
    derived = requirements.derive({"messages": USER, **native})
    assert sorted(feature_names(derived.features)) == sorted(features)
    assert sorted(guarantee_names(derived.guarantees)) == sorted(guarantees)
