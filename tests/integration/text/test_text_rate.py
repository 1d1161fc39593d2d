"""Chat and text requests share one rate budget (per user, or per client address for the anonymous user); an
admission of either kind reads it in one statement: its INSERT, which sums the caller's counts by the second."""

from __future__ import annotations

from horde.accounts.rate_limit import RATE_TURN_FUNCTION
from tests.support.native import pop
from tests.support.statements import statements
from tests.support.text_api import text_pop

CHAT_BODY = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}]}
TEXT_BODY = {"prompt": "Once", "models": ["m1"]}
#: The sum of the caller's counts, which the admission's INSERT makes: with a subquery on SQLite, by calling the
#: function that takes the caller's turn and sums them on PostgreSQL.
RATE_SUM = "sum(rate_counts.admitted)"


def counts_the_budget(statement: str) -> bool:
    return RATE_SUM in statement or f"{RATE_TURN_FUNCTION}(" in statement


def from_address(client, path: str, body: dict, key: str, address: str):
    return client.post(path, json=body, headers={"apikey": key}, environ_base={"REMOTE_ADDR": address})


def anonymous_chat(client, address):
    return client.post("/api/v2/generate/chat/async", json=CHAT_BODY, environ_base={"REMOTE_ADDR": address})


def anonymous_text(client, address):
    return client.post("/api/v2/generate/text/async", json=TEXT_BODY, environ_base={"REMOTE_ADDR": address})


def test_an_anonymous_clients_chat_and_text_requests_share_its_address_budget(client, make_user, runtime):
    _, owner = make_user("owner")
    pop(client, owner, threads=50)
    text_pop(client, owner, threads=50)
    runtime.settings = runtime.settings.replace(rate_limit_per_minute=3)
    assert [anonymous_chat(client, "203.0.113.7").status_code for _ in range(2)] == [202, 202]
    with statements(runtime) as seen:
        assert anonymous_text(client, "203.0.113.7").status_code == 202
    counts = [statement for statement in seen if counts_the_budget(statement)]
    assert len(counts) == 1 and "insert into text_requests" in counts[0], seen
    refused = anonymous_text(client, "203.0.113.7")
    assert (refused.status_code, refused.json["rc"]) == (429, "rate_limit_exceeded")
    assert "per client address" in refused.json["message"]
    assert anonymous_text(client, "198.51.100.9").status_code == 202  # another address has its own budget


def test_a_users_text_requests_count_its_chat_requests_from_any_address(client, make_user, runtime):
    _, owner = make_user("owner")
    pop(client, owner, threads=50)
    _, key = make_user("client", kudos=1000)
    runtime.settings = runtime.settings.replace(rate_limit_per_minute=2)
    assert from_address(client, "/api/v2/generate/chat/async", CHAT_BODY, key, "203.0.113.7").status_code == 202
    assert from_address(client, "/api/v2/generate/text/async", TEXT_BODY, key, "198.51.100.9").status_code == 202
    refused = client.post("/api/v2/generate/text/async", json=TEXT_BODY, headers={"apikey": key})
    assert (refused.status_code, refused.json["rc"]) == (429, "rate_limit_exceeded")
    assert "per user" in refused.json["message"]


def test_a_users_chat_request_is_refused_once_its_text_requests_fill_the_budget(client, make_user, runtime):
    _, owner = make_user("owner")
    pop(client, owner, threads=50)
    _, key = make_user("client", kudos=1000)
    runtime.settings = runtime.settings.replace(rate_limit_per_minute=2)
    for address in ("203.0.113.7", "198.51.100.9"):
        assert from_address(client, "/api/v2/generate/text/async", TEXT_BODY, key, address).status_code == 202
    with statements(runtime) as seen:
        refused = client.post("/api/v2/generate/chat/async", json=CHAT_BODY, headers={"apikey": key})
    assert (refused.status_code, refused.json["rc"]) == (429, "rate_limit_exceeded")
    assert refused.json["message"] == "Too many requests: at most 2 chat and text requests a minute per user."
    assert refused.headers["Retry-After"] == "60" and refused.headers["X-RateLimit-Limit"] == "2"
    counts = [statement for statement in seen if counts_the_budget(statement)]
    assert len(counts) == 1, seen


def test_an_anonymous_clients_chat_request_is_refused_once_its_text_requests_fill_its_address_budget(
    client, make_user, runtime
):
    _, owner = make_user("owner")
    pop(client, owner, threads=50)
    runtime.settings = runtime.settings.replace(rate_limit_per_minute=2)
    assert [anonymous_text(client, "203.0.113.7").status_code for _ in range(2)] == [202, 202]
    refused = anonymous_chat(client, "203.0.113.7")
    assert (refused.status_code, refused.json["rc"]) == (429, "rate_limit_exceeded")
    assert "per client address" in refused.json["message"]
    assert anonymous_chat(client, "198.51.100.9").status_code == 202  # another address has its own budget
