"""Settlement on both databases: the reply caps the billable tokens, and the reservation ends with the request."""

import pytest

from horde.chat import pricing
from tests.support.native import pop, queue, queued_id, status, submit

TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
BIG = {"max_length": 8192, "max_context_length": 16384}


def reward_and_usage(client, owner, requester, reply: dict, **body) -> tuple[int, dict]:
    request_id = queued_id(client, requester, **body)
    job = pop(client, owner, features=["tools"], **BIG)
    reward = submit(client, owner, job["id"], **reply).json["reward"]
    return reward, status(client, requester, request_id).json["reply"]["usage"]


@pytest.fixture
def owner(client, make_user):
    _, key = make_user("owner")
    pop(client, key, features=["tools"], **BIG)
    return key


def test_a_one_character_reply_cannot_claim_max_tokens(client, owner, make_user):
    _, requester = make_user("requester", kudos=1000)
    reward, usage = reward_and_usage(
        client, owner, requester, {"content": "a", "usage": {"completion_tokens": 4000}}, max_tokens=4000
    )
    bound = pricing.REPLY_TOKENS_MARGIN * 1 + pricing.REPLY_TOKENS_SLACK
    assert usage["completion_tokens"] == bound
    assert reward == pricing.price("m1", completion_tokens=bound, prompt_tokens=usage["prompt_tokens"])
    assert reward < pricing.price("m1", completion_tokens=4000, prompt_tokens=usage["prompt_tokens"])


def test_an_honest_count_within_the_margin_is_kept(client, owner, make_user):
    _, requester = make_user("requester", kudos=1000)
    _, usage = reward_and_usage(
        client, owner, requester, {"content": "word " * 400, "usage": {"completion_tokens": 700}}, max_tokens=1024
    )
    assert usage["completion_tokens"] == 700


def test_max_tokens_still_caps_the_count(client, owner, make_user):
    _, requester = make_user("requester", kudos=1000)
    _, usage = reward_and_usage(
        client, owner, requester, {"content": "word " * 400, "usage": {"completion_tokens": 700}}, max_tokens=300
    )
    assert usage["completion_tokens"] == 300


def test_tool_calls_count_towards_the_bound(client, owner, make_user):
    _, requester = make_user("requester", kudos=1000)
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"q": "' + "z" * 200 + '"}'},
    }
    reply = {"content": None, "tool_calls": [call], "finish_reason": "tool_calls", "usage": {"completion_tokens": 900}}
    _, usage = reward_and_usage(client, owner, requester, reply, max_tokens=1024, tools=TOOLS)
    estimate = pricing.reply_tokens({"tool_calls": [call]})
    assert estimate > 50
    assert usage["completion_tokens"] == pricing.REPLY_TOKENS_MARGIN * estimate + pricing.REPLY_TOKENS_SLACK


def test_a_missing_count_is_the_estimate_of_the_whole_reply(client, owner, make_user):
    _, requester = make_user("requester", kudos=1000)
    _, usage = reward_and_usage(
        client, owner, requester, {"content": "c" * 40, "reasoning_content": "r" * 80}, max_tokens=512
    )
    assert usage["completion_tokens"] == 30


def above_allowance(client, key):
    return queue(client, key, max_tokens=8000, availability_mode="wait")


def test_waiting_and_processing_requests_reserve_their_estimates_until_they_end(client, owner, make_user):
    probe = above_allowance(client, make_user("probe")[1]).json
    estimate = probe["metadata"]["kudos_estimate"]
    _, requester = make_user("requester", kudos=estimate + estimate // 2)
    first = above_allowance(client, requester)
    assert first.status_code == 202
    refused = above_allowance(client, requester)
    assert (refused.status_code, refused.json["rc"]) == (403, "KudosUpfront")
    assert refused.json["metadata"]["reserved_kudos"] == estimate
    assert "reserved by its requests still waiting or processing" in refused.json["message"]

    client.delete(f"/api/v2/generate/chat/status/{first.json['id']}", headers={"apikey": requester})
    processing = above_allowance(client, requester)
    assert processing.status_code == 202, "a cancelled request no longer reserves"
    job = pop(client, owner, features=["tools"], **BIG)
    assert above_allowance(client, requester).json["rc"] == "KudosUpfront", "a processing request still reserves"
    client.post("/api/v2/generate/chat/fault", json={"id": job["id"], "reason": "x"}, headers={"apikey": owner})
    for _ in range(2):  # the last attempts; the request ends faulted
        job = pop(client, owner, features=["tools"], **BIG)
        client.post("/api/v2/generate/chat/fault", json={"id": job["id"], "reason": "x"}, headers={"apikey": owner})
    assert status(client, requester, processing.json["id"]).json["state"] == "faulted"
    done = above_allowance(client, requester)
    assert done.status_code == 202, "a faulted request no longer reserves"
    job = pop(client, owner, features=["tools"], **BIG)
    assert submit(client, owner, job["id"], content="short").status_code == 200
    assert above_allowance(client, requester).status_code == 202, "a done request no longer reserves"


def test_requests_within_the_allowance_are_served_whatever_the_reservation(client, owner, make_user):
    _, requester = make_user("requester", kudos=0)
    assert [queue(client, requester).status_code for _ in range(3)] == [202, 202, 202]


def test_an_empty_reply_earns_the_floor_whatever_its_prompt_and_claim(client, owner, make_user):
    """Decision 0028: an empty reply (no content, reasoning or tool call) earns the floor; the prompt part of the
    price (here alone above the floor) cannot lift it, nor a reported count."""
    _, requester = make_user("requester", kudos=1000)
    long_prompt = [{"role": "user", "content": "word " * 1600}]
    reward, usage = reward_and_usage(
        client,
        owner,
        requester,
        {"content": "", "usage": {"completion_tokens": 4000}},
        max_tokens=4000,
        messages=long_prompt,
    )
    assert pricing.price("m1", completion_tokens=0, prompt_tokens=usage["prompt_tokens"]) > pricing.MIN_PRICE_KUDOS
    assert reward == pricing.MIN_PRICE_KUDOS
    assert usage["completion_tokens"] <= pricing.REPLY_TOKENS_SLACK
    assert 1000 - client.get("/api/v2/find_user", headers={"apikey": requester}).json["kudos"] == reward
