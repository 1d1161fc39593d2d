"""Kudos only for work that shows (decision 0028), on both databases: a text generation is paid for at most what
its own text shows, an empty one earns the floor, each of `n` on its own; the requester pays what the owner earns."""

from __future__ import annotations

import pytest

from horde.chat import pricing
from tests.support.text_api import find_user, text_pop, text_queued, text_status, text_submit

#: A prompt of 2,000 tokens by the Horde's estimate (within the context asked): its part of the price alone is
#: above the floor.
LONG_PROMPT, LONG_PROMPT_TOKENS = "word " * 1600, 2000
CONTEXT_TOKENS = 4096


@pytest.fixture
def owner(client, make_user):
    _, key = make_user()
    text_pop(client, key)  # online: the free allowance is the idle pool's
    return key


def served(client, owner, requester, generations: list[dict], prompt: str = "Once", max_length: int = 1024):
    """Queue a request of one generation per body, take them all, submit each body; the rewards in order."""
    request_id = text_queued(
        client,
        requester,
        prompt,
        params={"n": len(generations), "max_length": max_length, "max_context_length": CONTEXT_TOKENS},
    )
    job = text_pop(client, owner, amount=len(generations), max_length=1024)
    assert len(job["ids"]) == len(generations)
    rewards = []
    for job_id, body in zip(job["ids"], generations, strict=True):
        answer = text_submit(client, owner, job_id, **body)
        assert answer.status_code == 200, answer.json
        rewards.append(answer.json["reward"])
    return request_id, rewards


def test_an_empty_generation_claiming_max_length_earns_the_floor(client, owner, make_user):
    _, requester = make_user(kudos=1000)
    request_id, rewards = served(
        client, owner, requester, [{"generation": "", "completion_tokens": 1024}], prompt=LONG_PROMPT
    )
    assert pricing.price("m1", completion_tokens=0, prompt_tokens=LONG_PROMPT_TOKENS) > pricing.MIN_PRICE_KUDOS
    assert rewards == [pricing.MIN_PRICE_KUDOS]
    assert text_status(client, request_id)["kudos"] == pricing.MIN_PRICE_KUDOS
    assert find_user(client, requester)["kudos"] == 1000 - pricing.MIN_PRICE_KUDOS
    assert find_user(client, owner)["kudos"] == pricing.MIN_PRICE_KUDOS


def test_a_short_generation_cannot_claim_max_length(client, owner, make_user, runtime):
    from horde.text.models import TextJob

    _, requester = make_user(kudos=1000)
    _, (reward,) = served(client, owner, requester, [{"generation": "abc", "completion_tokens": 1024}])
    bound = pricing.REPLY_TOKENS_MARGIN * 1 + pricing.REPLY_TOKENS_SLACK
    assert reward == pricing.price("m1", completion_tokens=bound, prompt_tokens=1)
    with runtime.db.read() as session:
        (tokens,) = session.query(TextJob.tokens).all()[0]
    assert tokens == bound


def test_an_honest_count_within_the_margin_is_kept_and_max_length_caps_it(client, owner, make_user):
    _, requester = make_user(kudos=1000)
    text = "word " * 400  # 500 tokens by the Horde's estimate
    _, (kept,) = served(client, owner, requester, [{"generation": text, "completion_tokens": 700}])
    assert kept == pricing.price("m1", completion_tokens=700, prompt_tokens=1)
    _, (capped,) = served(client, owner, requester, [{"generation": text, "completion_tokens": 700}], max_length=300)
    assert capped == pricing.price("m1", completion_tokens=300, prompt_tokens=1)


def test_each_of_n_generations_is_paid_for_its_own_text(client, owner, make_user):
    _, requester = make_user(kudos=1000)
    claim = {"completion_tokens": 1024}
    request_id, rewards = served(
        client,
        owner,
        requester,
        [{"generation": "", **claim}, {"generation": "x" * 400, **claim}, {"generation": "", **claim}],
        prompt=LONG_PROMPT,
    )
    shown = pricing.REPLY_TOKENS_MARGIN * 100 + pricing.REPLY_TOKENS_SLACK
    paid = pricing.price("m1", completion_tokens=shown, prompt_tokens=LONG_PROMPT_TOKENS)
    assert rewards == [pricing.MIN_PRICE_KUDOS, paid, pricing.MIN_PRICE_KUDOS]
    assert text_status(client, request_id)["kudos"] == sum(rewards)
    assert find_user(client, requester)["kudos"] == 1000 - sum(rewards)
    assert find_user(client, owner)["kudos"] == sum(rewards)


def test_an_empty_generation_without_a_count_earns_the_floor(client, owner, make_user):
    _, requester = make_user(kudos=1000)
    _, rewards = served(client, owner, requester, [{"generation": ""}], prompt=LONG_PROMPT)
    assert rewards == [pricing.MIN_PRICE_KUDOS]
