"""Shared keys: /api/v2/sharedkeys, and requests paid with one, charged to its owner within its limits."""

from __future__ import annotations

import datetime as dt
import email.utils

import pytest
from sqlalchemy import select

from horde.accounts import shared_keys
from horde.accounts.identity import Identity
from horde.accounts.models import SharedKey
from horde.chat import pricing
from horde.chat import service as chat_service
from horde.chat.models import ChatRequest
from tests.support.native import declaration, pop, queue, submit
from tests.support.text_api import text_async, text_pop, text_submit

BIG_MODEL = "koboldcpp/Llama-3.3-70B-Instruct"  # 70B in the model reference: priced 8.75 times an 8B model
SMALL_MODEL = "koboldcpp/Qwen3-8B"


def create(client, key: str | None, **body):
    return client.post("/api/v2/sharedkeys", json=body, headers={"apikey": key} if key else {})


def created(client, key: str, **body) -> dict:
    answer = create(client, key, **body)
    assert answer.status_code == 200, answer.json
    return answer.json


def details(client, key_id: str) -> dict:
    answer = client.get(f"/api/v2/sharedkeys/{key_id}")
    assert answer.status_code == 200, answer.json
    return answer.json


def patch(client, key: str, key_id: str, **body):
    return client.patch(f"/api/v2/sharedkeys/{key_id}", json=body, headers={"apikey": key})


def balance(client, key: str) -> float:
    return client.get("/api/v2/find_user", headers={"apikey": key}).json["kudos"]


def rc(answer) -> tuple[int, str]:
    return answer.status_code, answer.json["rc"]


# -- the keys themselves ----------------------------------------------------------------------------------------


def test_a_key_is_created_read_changed_and_deleted_by_its_owner(client, make_user):
    owner, owner_key = make_user("lender")
    made = created(client, owner_key, kudos=500, name="Mutual Aid", max_text_tokens=200, expiry=30)
    assert made["username"] == f"lender#{owner.id}" and made["name"] == "Mutual Aid"
    assert (made["kudos"], made["utilized"], made["max_text_tokens"]) == (500, 0, 200)
    assert (made["max_image_pixels"], made["max_image_steps"]) == (-1, -1)
    expiry = email.utils.parsedate_to_datetime(made["expiry"])  # RFC 822, as the AI Horde answers it
    assert dt.timedelta(days=29) < expiry.replace(tzinfo=None) - dt.datetime.now(dt.UTC).replace(tzinfo=None)
    assert details(client, made["id"]) == made  # no API key needed: the id is the key
    changed = patch(client, owner_key, made["id"], kudos=50, expiry=-1, name="Other name")
    assert changed.status_code == 200 and "expiry" not in changed.json
    assert (changed.json["kudos"], changed.json["name"], changed.json["max_text_tokens"]) == (50, "Other name", 200)
    assert client.get("/api/v2/find_user", headers={"apikey": owner_key}).json["sharedkey_ids"] == [made["id"]]
    deleted = client.delete(f"/api/v2/sharedkeys/{made['id']}", headers={"apikey": owner_key})
    assert (deleted.status_code, deleted.json) == (200, {"message": "OK"})
    assert rc(client.get(f"/api/v2/sharedkeys/{made['id']}")) == (401, "InvalidAPIKey")


def test_put_creates_as_the_ai_horde_does_with_its_defaults(client, make_user):
    _, owner_key = make_user()
    made = client.put("/api/v2/sharedkeys", json={}, headers={"apikey": owner_key}).json
    assert (made["kudos"], made["utilized"], made["max_text_tokens"]) == (shared_keys.DEFAULT_KUDOS, 0, -1)
    assert "expiry" not in made and "name" not in made


def test_refusals_of_key_management(client, make_user):
    _, owner_key = make_user()
    _, other_key = make_user()
    key_id = created(client, owner_key)["id"]
    assert rc(patch(client, owner_key, key_id)) == (400, "NoSharedKeyModSelected")
    assert rc(patch(client, other_key, key_id, kudos=1)) == (403, "Forbidden")
    assert rc(client.delete(f"/api/v2/sharedkeys/{key_id}", headers={"apikey": other_key})) == (403, "Forbidden")
    assert rc(patch(client, owner_key, "00000000-0000-0000-0000-000000000000", kudos=1)) == (401, "InvalidAPIKey")
    assert rc(client.get("/api/v2/sharedkeys/not-a-key")) == (401, "InvalidAPIKey")
    assert rc(create(client, None)) == (403, "AnonForbidden")
    assert rc(create(client, key_id)) == (401, "InvalidAPIKey")  # a shared key cannot make keys
    assert rc(patch(client, key_id, key_id, kudos=1)) == (401, "InvalidAPIKey")
    assert details(client, key_id)["kudos"] == shared_keys.DEFAULT_KUDOS


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"kudos": -2}, "kudos"),
        ({"kudos": shared_keys.MAX_KUDOS + 1}, "kudos"),
        ({"max_text_tokens": 501}, "max_text_tokens"),
        ({"max_image_steps": 501}, "max_image_steps"),
        ({"expiry": -2}, "expiry"),
        ({"name": "ab"}, "name"),
        ({"kudos": "5"}, "kudos"),
    ],
)
def test_out_of_range_inputs_are_refused(client, make_user, body, param):
    _, owner_key = make_user()
    answer = create(client, owner_key, **body)
    assert (answer.status_code, answer.json["rc"], answer.json["param"]) == (400, "BadRequest", param)


def test_a_user_has_at_most_three_keys_a_trusted_one_ten(client, make_user):
    _, key = make_user()
    _, trusted_key = make_user(trusted=True)
    for _ in range(shared_keys.MAX_KEYS):
        created(client, key)
    assert rc(create(client, key)) == (403, "Forbidden")
    for _ in range(shared_keys.MAX_KEYS_TRUSTED):
        created(client, trusted_key)
    assert rc(create(client, trusted_key)) == (403, "Forbidden")


# -- requests paid with a key -----------------------------------------------------------------------------------


def test_a_text_request_paid_with_a_key_charges_its_owner_and_the_keys_utilization(client, make_user):
    owner, owner_key = make_user("lender", kudos=100)
    _, worker_key = make_user()
    key_id = created(client, owner_key, kudos=50, name="lent")["id"]
    text_pop(client, worker_key)
    queued = text_async(client, key_id, params={"max_length": 32})
    assert queued.status_code == 202, queued.json
    job = text_pop(client, worker_key)
    reward = text_submit(client, worker_key, job["id"], generation="A reply.").json["reward"]
    assert reward >= 1
    assert details(client, key_id)["utilized"] == reward
    assert balance(client, owner_key) == 100 - reward and balance(client, worker_key) == reward
    seen_with_key = client.get("/api/v2/find_user", headers={"apikey": key_id}).json
    assert seen_with_key["username"] == f"lender#{owner.id} (Shared Key: lent)" and seen_with_key["id"] == owner.id
    assert "sharedkey_ids" not in seen_with_key  # the owner's public view
    assert seen_with_key["records"]["request"]["text"] == 1


def test_a_chat_request_paid_with_a_key_charges_its_owner_and_the_keys_utilization(client, make_user):
    _, owner_key = make_user(kudos=100)
    _, worker_key = make_user()
    key_id = created(client, owner_key, kudos=50)["id"]
    pop(client, worker_key)
    assert queue(client, key_id, max_tokens=64).status_code == 202
    job = pop(client, worker_key)
    reward = submit(client, worker_key, job["id"], content="x" * 400, usage={"completion_tokens": 60}).json["reward"]
    assert details(client, key_id)["utilized"] == reward >= 1
    assert details(client, key_id)["kudos"] == 50  # the settling statement binds a `kudos` of its own: not this
    assert balance(client, owner_key) == 100 - reward


def test_max_text_tokens_refuses_larger_requests_and_lowers_a_chat_default(client, make_user):
    _, owner_key = make_user(kudos=100)
    _, worker_key = make_user()
    key_id = created(client, owner_key, max_text_tokens=100)["id"]
    text_pop(client, worker_key)
    pop(client, worker_key)
    refused = text_async(client, key_id, params={"max_length": 101})
    assert rc(refused) == (400, "BadRequest") and refused.json["param"] == "params.max_length"
    refused = queue(client, key_id, max_tokens=101)
    assert rc(refused) == (400, "BadRequest") and refused.json["param"] == "max_tokens"
    assert text_async(client, key_id, params={"max_length": 100}).status_code == 202
    assert queue(client, key_id).status_code == 202  # no max_tokens: the default, lowered to the key's limit
    assert pop(client, worker_key)["payload"]["max_tokens"] == 100
    assert queue(client, owner_key).status_code == 202  # the owner's own key has no such limit
    assert pop(client, worker_key)["payload"]["max_tokens"] == 512


def test_the_kudos_limit_counts_the_estimates_of_the_keys_open_requests(client, make_user):
    _, owner_key = make_user(kudos=1000)
    _, worker_key = make_user()
    text_pop(client, worker_key)
    estimate = text_async(client, owner_key, params={"max_length": 100}, dry_run=True).json["kudos"]
    key_id = created(client, owner_key, kudos=2 * estimate)["id"]
    first = text_async(client, key_id, params={"max_length": 100})
    second = text_async(client, key_id, params={"max_length": 100})
    assert first.status_code == second.status_code == 202
    third = text_async(client, key_id, params={"max_length": 100})
    assert rc(third) == (403, "SharedKeyInsufficientKudos")
    assert third.json["metadata"] == {"kudos_estimate": estimate, "kudos_left": 0, "kudos_held": 2 * estimate}
    client.delete(f"/api/v2/generate/text/status/{first.json['id']}")  # a cancelled request holds nothing
    assert text_async(client, key_id, params={"max_length": 100}).status_code == 202
    assert details(client, key_id)["utilized"] == 0


def test_a_key_that_used_its_kudos_is_empty_and_an_expired_one_refused(client, make_user):
    _, owner_key = make_user(kudos=100)
    _, worker_key = make_user()
    key_id = created(client, owner_key, kudos=50)["id"]
    text_pop(client, worker_key)
    pop(client, worker_key)
    text_async(client, key_id, params={"max_length": 32})
    job = text_pop(client, worker_key)
    reward = text_submit(client, worker_key, job["id"]).json["reward"]
    assert patch(client, owner_key, key_id, kudos=reward).status_code == 200
    assert rc(text_async(client, key_id)) == (403, "SharedKeyEmpty")
    assert rc(queue(client, key_id)) == (403, "SharedKeyEmpty")
    assert patch(client, owner_key, key_id, kudos=-1, expiry=0).status_code == 200  # expires at once
    assert rc(text_async(client, key_id)) == (403, "SharedKeyExpired")
    assert rc(queue(client, key_id)) == (403, "SharedKeyExpired")


def test_a_key_deleted_after_its_owner_was_remembered_is_refused(client, make_user):
    _, owner_key = make_user(kudos=100)
    key_id = created(client, owner_key)["id"]
    assert text_async(client, key_id, dry_run=True).status_code == 200  # this process now knows the key
    client.delete(f"/api/v2/sharedkeys/{key_id}", headers={"apikey": owner_key})
    assert rc(text_async(client, key_id)) == (401, "InvalidAPIKey")


def test_a_key_cannot_run_workers(client, make_user):
    _, owner_key = make_user()
    key_id = created(client, owner_key)["id"]
    answer = client.post("/api/v2/generate/text/pop", json={"name": "w", "models": ["m1"]}, headers={"apikey": key_id})
    assert rc(answer) == (401, "InvalidAPIKey")
    answer = client.post("/api/v2/generate/chat/pop", json=declaration("w"), headers={"apikey": key_id})
    assert rc(answer) == (401, "InvalidAPIKey")


def test_a_text_generation_through_a_key_costs_at_most_its_share_of_the_estimate(client, make_user):
    """A request for any model is estimated at the default size; a 70B worker's generation would cost more."""
    _, owner_key = make_user(kudos=100)
    _, worker_key = make_user()
    text_pop(client, worker_key, models=[BIG_MODEL])
    estimate = text_async(client, owner_key, models=[], params={"max_length": 32}, dry_run=True).json["kudos"]
    key_id = created(client, owner_key, kudos=estimate)["id"]
    assert text_async(client, key_id, models=[], params={"max_length": 32}).status_code == 202
    job = text_pop(client, worker_key, models=[BIG_MODEL])
    assert job["model"] == BIG_MODEL
    reward = text_submit(client, worker_key, job["id"], generation="word " * 40, completion_tokens=32).json["reward"]
    assert reward == estimate
    assert details(client, key_id)["utilized"] == estimate
    _, uncapped_key = make_user(kudos=100)
    text_async(client, uncapped_key, models=[], params={"max_length": 32})
    job = text_pop(client, worker_key, models=[BIG_MODEL])
    uncapped = text_submit(client, worker_key, job["id"], generation="word " * 40, completion_tokens=32).json
    assert uncapped["reward"] > estimate  # the same generation, paid with a key of no limit: its full price


def test_a_chat_reply_through_a_key_costs_at_most_its_estimate(client, make_user):
    """The estimate prices the first of the request's models; a larger one of them may serve it."""
    _, owner_key = make_user(kudos=100)
    _, worker_key = make_user()
    pop(client, worker_key, models=(BIG_MODEL,))
    key_id = created(client, owner_key, kudos=100)["id"]
    body = {"models": [SMALL_MODEL, BIG_MODEL], "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 64}
    queued = client.post("/api/v2/generate/chat/async", json=body, headers={"apikey": key_id})
    assert queued.status_code == 202, queued.json
    estimate = queued.json["kudos"]
    job = pop(client, worker_key, models=(BIG_MODEL,))
    assert job["model"] == BIG_MODEL
    reward = submit(client, worker_key, job["id"], content="x" * 400, usage={"completion_tokens": 64}).json["reward"]
    assert reward == estimate == details(client, key_id)["utilized"]
    assert pricing.price(BIG_MODEL, completion_tokens=64, prompt_tokens=0) > estimate  # its price, uncapped


def test_a_cancelled_stream_through_a_key_charges_the_key(client, make_user, runtime):
    owner, owner_key = make_user(kudos=100)
    _, worker_key = make_user()
    key_id = created(client, owner_key, kudos=100)["id"]
    pop(client, worker_key)
    request_id = queue(client, key_id, max_tokens=64).json["id"]
    pop(client, worker_key)
    caller = Identity(owner.id, owner.username, trusted=False, anonymous=False, shared_key_id=key_id)
    chat_service.cancel(runtime, caller, request_id, streamed_chars=80)
    charged = 100 - balance(client, owner_key)
    assert charged >= 1 and details(client, key_id)["utilized"] == charged


def test_the_front_refuses_a_keys_request_in_openais_envelope(client, make_user):
    _, owner_key = make_user(kudos=100)
    _, worker_key = make_user()
    pop(client, worker_key)
    key_id = created(client, owner_key, max_text_tokens=50)["id"]
    answer = client.post(
        "/v1/chat/completions",
        json={"model": "m1", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 51},
        headers={"Authorization": f"Bearer {key_id}"},
    )
    assert answer.status_code == 400
    assert answer.json["error"]["param"] == "max_tokens" and "limited to 50 tokens" in answer.json["error"]["message"]


def test_requests_name_their_key(client, make_user, runtime):
    _, owner_key = make_user(kudos=100)
    key_id = created(client, owner_key)["id"]
    pop(client, make_user()[1])
    request_id = queue(client, key_id).json["id"]
    with runtime.db.read() as session:
        assert session.scalar(select(ChatRequest.shared_key_id).where(ChatRequest.id == request_id)) == key_id
        assert session.get(SharedKey, key_id) is not None
