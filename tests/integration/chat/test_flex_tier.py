"""The flex tier (horde/chat/tiers.py) on both databases: flex requests wait behind the interactive requests of their
priority class, their requester pays HORDE_BATCH_PRICE_FACTOR of the price (rounded up) while the worker earns the
price, and batch lines need their estimate upfront and count on a rate of their own."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import select

from horde import errors
from horde.accounts.identity import Identity
from horde.accounts.models import KudosEntry
from horde.chat import pricing, service, tiers
from horde.chat.models import ChatJob, ChatRequest
from horde.text import service as text_service
from horde.text.models import TextRequest
from tests.support.native import pop, queued_id, status, submit
from tests.support.text_api import find_user, text_pop, text_submit

#: A reply that shows enough work to cost several kudos, so that the factor shows.
LONG_REPLY = "word " * 300
BIG = {"max_length": 4096, "max_context_length": 8192}


@pytest.fixture
def owner(client, make_user):
    _, key = make_user("owner")
    pop(client, key, **BIG)  # m1 becomes known and served
    return key


def identity(user) -> Identity:
    return Identity.of(user)


def native(content: str = "Hello", **extra) -> dict:
    return {"model": "m1", "messages": [{"role": "user", "content": content}], **extra}


def request_of(runtime, job_id: str) -> str:
    with runtime.db.read() as session:
        return session.get_one(ChatJob, job_id).request_id


def test_a_flex_request_waits_behind_its_users_interactive_request(runtime, client, owner, make_user):
    """The same user, the flex request queued first: the interactive one is served first all the same."""
    user, _ = make_user("requester", kudos=1000)
    flex = service.create(runtime, identity(user), native("flex"), tier=tiers.FLEX_INTERACTIVE)
    interactive = service.create(runtime, identity(user), native("interactive"))
    served = [request_of(runtime, pop(client, owner, **BIG)["id"]) for _ in range(2)]
    assert served == [interactive.id, flex.id]


def test_flex_waits_behind_its_whole_class_and_keeps_its_class(runtime, client, owner, make_user):
    """A richer user's flex request waits behind a poorer user's interactive one (both with kudos), and is still
    served before the requests of users without kudos (the class decides first)."""
    rich, _ = make_user("rich", kudos=100_000)
    _, poor_key = make_user("poor", kudos=10)
    _, broke_key = make_user("broke", kudos=0)
    broke = queued_id(client, broke_key)
    rich_flex = service.create(runtime, identity(rich), native(), tier=tiers.FLEX_INTERACTIVE)
    poor = queued_id(client, poor_key)
    served = [request_of(runtime, pop(client, owner, **BIG)["id"]) for _ in range(3)]
    assert served == [poor, rich_flex.id, broke]
    with runtime.db.read() as session:
        assert session.get_one(ChatRequest, rich_flex.id).priority == 100_000 - tiers.FLEX_PRIORITY_OFFSET


def test_a_flex_reply_charges_the_factor_and_pays_the_worker_the_price(runtime, client, owner, make_user):
    user, key = make_user("requester", kudos=1000)
    owner_before = find_user(client, owner)["kudos"]
    request = service.create(runtime, identity(user), native(max_tokens=1024), tier=tiers.FLEX_INTERACTIVE)
    job = pop(client, owner, **BIG)
    reward = submit(client, owner, job["id"], content=LONG_REPLY).json["reward"]
    answered = status(client, key, request.id).json
    price = pricing.price(
        "m1", completion_tokens=answered["reply"]["usage"]["completion_tokens"], prompt_tokens=request.prompt_tokens
    )
    charge = math.ceil(price * runtime.settings.batch_price_factor)
    assert price >= 3 and charge < price  # the factor shows
    assert reward == price
    assert answered["kudos_charged"] == charge
    assert find_user(client, key)["kudos"] == 1000 - charge
    assert find_user(client, owner)["kudos"] == owner_before + price
    with runtime.db.read() as session:
        amounts = sorted(session.scalars(select(KudosEntry.amount).where(KudosEntry.request_id == request.id)))
    assert amounts == [-charge, price]


def test_an_interactive_reply_charges_what_the_worker_earns(runtime, client, owner, make_user):
    user, key = make_user("requester", kudos=1000)
    request = service.create(runtime, identity(user), native(max_tokens=1024))
    job = pop(client, owner, **BIG)
    reward = submit(client, owner, job["id"], content=LONG_REPLY).json["reward"]
    assert status(client, key, request.id).json["kudos_charged"] == reward
    assert find_user(client, key)["kudos"] == 1000 - reward


def test_the_flex_estimate_is_the_factor_of_the_price(runtime, owner, make_user):
    user, _ = make_user("requester", kudos=1000)
    interactive = service.create(runtime, identity(user), native(max_tokens=2000))
    flex = service.create(runtime, identity(user), native(max_tokens=2000), tier=tiers.FLEX_INTERACTIVE)
    assert flex.kudos_estimate == math.ceil(interactive.kudos_estimate * runtime.settings.batch_price_factor)
    assert (interactive.service_tier, flex.service_tier) == ("default", "flex")


def test_a_batch_line_has_no_free_allowance(runtime, owner, make_user):
    """A short request of a user without kudos passes on the free allowance, interactive or flex; as a batch line it
    needs its estimate upfront."""
    user, _ = make_user("broke", kudos=0)
    service.create(runtime, identity(user), native(max_tokens=64))
    service.create(runtime, identity(user), native(max_tokens=64), tier=tiers.FLEX_INTERACTIVE)
    with pytest.raises(errors.KudosUpfront) as refused:
        service.create(runtime, identity(user), native(max_tokens=64), tier=tiers.BATCH_LINE)
    assert refused.value.message.startswith("a batch line has no free allowance")


def test_batch_lines_count_apart_from_the_interactive_rate(runtime, owner, make_user):
    """At a rate limit of 2 a minute, three batch lines are admitted, and the user's two interactive calls still are;
    the third interactive call is refused."""
    limited = runtime.settings.replace(rate_limit_per_minute=2)
    runtime.settings = limited
    user, _ = make_user("requester", kudos=10_000)
    for _ in range(3):
        service.create(runtime, identity(user), native(), tier=tiers.BATCH_LINE)
    for _ in range(2):
        service.create(runtime, identity(user), native())
    with pytest.raises(errors.TooManyRequests):
        service.create(runtime, identity(user), native())


def test_a_flex_text_generation_charges_the_factor(runtime, client, make_user):
    text_pop(client, make_user("text-owner")[1], models=("t1",), name="tw-flex")  # t1 becomes known and served
    _, owner_key = make_user("owner2")
    user, key = make_user("requester", kudos=1000)
    body = {"prompt": "Once upon a time", "models": ["t1"], "params": {"max_length": 512}}
    admitted = text_service.create(runtime, identity(user), body, tier=tiers.BATCH_LINE)
    assert admitted.request is not None
    job = text_pop(client, owner_key, models=("t1",), name="tw-flex2")
    reward = text_submit(client, owner_key, job["id"], generation=LONG_REPLY).json["reward"]
    charge = math.ceil(reward * runtime.settings.batch_price_factor)
    assert reward >= 3 and charge < reward
    assert find_user(client, key)["kudos"] == 1000 - charge
    with runtime.db.read() as session:
        request = session.get_one(TextRequest, admitted.request.id)
    assert (request.kudos_charged, request.service_tier) == (charge, "flex")
    assert request.priority == 1000 - tiers.FLEX_PRIORITY_OFFSET
