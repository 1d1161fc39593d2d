"""What was accepted and not acted on, or lowered, as the answer names it (horde/oai/ignored.py)."""

from __future__ import annotations

from horde.oai import ignored
from horde.oai.ignored import Ignored

GROW = {"from": 4096, "to": 9000, "reason": "grow"}


def test_paths_keep_their_first_order_and_appear_once():
    named = Ignored()
    for path in ("user", "tools[0].cache_control", "user", "prompt_cache_key"):
        named.add(path)
    named.add_keys({"type": "function", "function": {}, "defer": 1, "x": 2}, ("type", "function"), "tools[1]")
    named.add_keys({"a": 1, "b": 2}, ("a",), "")
    assert named.paths == ["user", "tools[0].cache_control", "prompt_cache_key", "tools[1].defer", "tools[1].x", "b"]


def test_nothing_named_writes_no_header_and_empty_lists():
    assert ignored.headers(Ignored(), None) == {}
    assert ignored.headers(None, [GROW]) == {}
    assert ignored.x_horde_fields(None, None) == {
        "context_adjustments": None,
        "ignored_parameters": [],
        "lowered_parameters": [],
    }


def test_admission_s_own_lowering_is_named_as_the_token_limit():
    adjustments = [{"from": 4000, "to": 1024, "reason": "worker_max_length"}, GROW]
    named = Ignored(token_param="max_completion_tokens")
    assert ignored.lowered_parameters(named, adjustments) == [
        {"param": "max_completion_tokens", "from": 4000, "to": 1024}
    ]
    assert ignored.context_adjustments(named, adjustments) == adjustments
    assert ignored.headers(named, adjustments) == {"x-horde-lowered-parameters": "max_completion_tokens=1024"}


def test_a_ceiling_lowering_and_admission_s_are_one_from_the_value_sent():
    named = Ignored()
    named.lower("max_tokens", 32000, 16384)
    named.lower("thinking.budget_tokens", 31999, 16383)
    adjustments = [{"from": 16384, "to": 8192, "reason": "worker_max_length"}, GROW]
    assert ignored.lowered_parameters(named, adjustments) == [
        {"param": "max_tokens", "from": 32000, "to": 8192},
        {"param": "thinking.budget_tokens", "from": 31999, "to": 16383},
    ]
    assert ignored.context_adjustments(named, adjustments) == [
        {"from": 32000, "to": 8192, "reason": "worker_max_length"},
        GROW,
    ]
    # Workers that produce the ceiling: admission lowered nothing more, the screening's lowering is reported alone.
    assert ignored.context_adjustments(named, None) == [{"from": 32000, "to": 16384, "reason": "worker_max_length"}]
    assert ignored.headers(named, None) == {
        "x-horde-lowered-parameters": "max_tokens=16384, thinking.budget_tokens=16383"
    }


def test_the_header_names_at_most_its_limit_and_says_how_many_more():
    named = Ignored()
    for index in range(ignored.HEADER_MAX_PATHS + 5):
        named.add(f"messages[{index}].content[0].cache_control")
    header = ignored.headers(named, None)[ignored.IGNORED_HEADER]
    assert header.count("cache_control") == ignored.HEADER_MAX_PATHS
    assert header.endswith(", +5 more")
    assert len(ignored.x_horde_fields(named, None)["ignored_parameters"]) == ignored.HEADER_MAX_PATHS + 5


def test_a_stored_answer_gives_its_headers_back():
    named = Ignored(token_param="max_output_tokens")
    named.add("tools[8]")
    named.lower("max_output_tokens", 64000, 16384)
    body = {"x_horde": ignored.x_horde_fields(named, None)}
    assert (
        ignored.stored_headers(body)
        == ignored.headers(named, None)
        == {
            "x-horde-ignored-parameters": "tools[8]",
            "x-horde-lowered-parameters": "max_output_tokens=16384",
        }
    )
    assert ignored.stored_headers({"id": "resp_x"}) == {}


def test_take_renames_into_the_dialect_s_names():
    chat = Ignored()
    chat.add("user")
    chat.lower("max_tokens", 20000, 16384)
    dialect = Ignored()
    dialect.add("system[0].cache_control")
    dialect.take(chat, lambda path: "metadata.user_id" if path == "user" else path)
    assert dialect.paths == ["system[0].cache_control", "metadata.user_id"]
    assert dialect.lowered == [{"param": "max_tokens", "from": 20000, "to": 16384}]
