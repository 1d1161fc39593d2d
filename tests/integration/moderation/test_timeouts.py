"""IP timeouts: a moderator times out an address or a network, every call from it is 403 TimeoutIP (the native
shape, and OpenAI's envelope on /v1), the moderators' operations excepted; a worker's recorded address."""

from __future__ import annotations

import pytest

from horde.config import Settings
from horde.workers import service as workers
from tests.support.moderation import from_address, headers, time_out, with_role
from tests.support.native import declaration

CLIENT = "203.0.113.7"


@pytest.fixture
def moderator(runtime, make_user) -> str:
    return with_role(runtime, make_user, "moderator")[1]


def test_a_timed_out_address_is_refused_on_both_apis_and_v1_until_lifted(client, make_user, moderator):
    _, key = make_user()
    env = from_address(CLIENT)
    assert client.get("/api/v2/find_user", headers=headers(key), environ_base=env).status_code == 200
    assert time_out(client, moderator, CLIENT, hours=2, reason="scraping").json == {"message": "OK"}

    native = client.get("/api/v2/find_user", headers=headers(key), environ_base=env)
    assert (native.status_code, native.json["rc"]) == (403, "TimeoutIP")
    assert "more seconds" in native.json["message"]
    front = client.get("/v1/models", headers={"Authorization": f"Bearer {key}"}, environ_base=env)
    assert front.status_code == 403 and front.json["error"]["code"] == "TimeoutIP"
    assert front.json["error"]["type"] == "permission_error"
    other = client.get("/api/v2/find_user", headers=headers(key), environ_base=from_address("203.0.113.8"))
    assert other.status_code == 200
    assert client.get("/health", environ_base=env).status_code == 200  # not an API call

    listed = client.get("/api/v2/operations/ipaddr", headers=headers(moderator), environ_base=env).json
    assert [entry["ipaddr"] for entry in listed] == [CLIENT] and 7000 < listed[0]["seconds"] <= 7200
    lifted = client.delete(
        "/api/v2/operations/ipaddr", json={"ipaddr": CLIENT}, headers=headers(moderator), environ_base=env
    )
    assert lifted.status_code == 200  # the operations answer a moderator behind the timed-out address
    assert client.get("/api/v2/find_user", headers=headers(key), environ_base=env).status_code == 200
    assert client.get("/api/v2/operations/ipaddr", headers=headers(moderator)).json == []


def test_a_network_holds_every_address_in_it_ipv4_and_ipv6(client, make_user, moderator):
    _, key = make_user()
    assert time_out(client, moderator, "198.51.100.0/24").status_code == 200
    assert time_out(client, moderator, "2001:db8:7::/48").status_code == 200
    for address, refused in (
        ("198.51.100.250", True),
        ("198.51.101.1", False),
        ("2001:db8:7:1::9", True),
        ("2001:db8:8::9", False),
        ("::ffff:198.51.100.3", True),
    ):
        answer = client.get("/api/v2/find_user", headers=headers(key), environ_base=from_address(address))
        assert (answer.status_code == 403) is refused, address
    covering = client.get("/api/v2/operations/ipaddr/198.51.100.77", headers=headers(moderator)).json
    assert [entry["ipaddr"] for entry in covering] == ["198.51.100.0/24"]
    overlapping = client.get("/api/v2/operations/ipaddr/2001:db8::/32", headers=headers(moderator)).json
    assert [entry["ipaddr"] for entry in overlapping] == ["2001:db8:7::/48"]
    assert client.get("/api/v2/operations/ipaddr/192.0.2.1", headers=headers(moderator)).json == []


def test_the_address_behind_trusted_proxies_is_the_one_timed_out(runtime, make_user, database_url):
    from horde.app import create_app, init_schema
    from horde.runtime import Runtime

    hub = Runtime.build(Settings.from_env({}, database_url=database_url, trusted_proxy_hops=1))
    init_schema(hub)
    try:
        client = create_app(runtime=hub).test_client()
        _, moderator_key = with_role(hub, make_user, "moderator")
        _, key = make_user()
        assert time_out(client, moderator_key, CLIENT).status_code == 200
        proxied = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": f"192.0.2.50, {CLIENT}"}
        answer = client.get("/api/v2/find_user", headers=headers(key), environ_base=proxied)
        assert answer.json["rc"] == "TimeoutIP"  # the proxy's hop names the client, not the proxy
        spoofed = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": f"{CLIENT}, 192.0.2.50"}
        assert client.get("/api/v2/find_user", headers=headers(key), environ_base=spoofed).status_code == 200
    finally:
        hub.close()


def test_a_workers_recorded_address_is_blocked_and_unblocked(client, make_user, moderator):
    _, owner_key = make_user()
    env = from_address("2001:db8:99:1::5")
    body = {"name": "blocked-worker", "models": ["blk-model"], "max_length": 64, "max_context_length": 512}
    assert (
        client.post("/api/v2/generate/text/pop", json=body, headers=headers(owner_key), environ_base=env).status_code
        == 200
    )
    worker_id = client.get("/api/v2/workers/name/blocked-worker").json["id"]
    blocked = client.put(
        f"/api/v2/operations/block_worker_ipaddr/{worker_id}", json={"days": 3}, headers=headers(moderator)
    )
    assert blocked.json == {"message": "OK"}
    listed = client.get("/api/v2/operations/ipaddr", headers=headers(moderator)).json
    assert listed[0]["ipaddr"] == "2001:db8:99:1::/64" and listed[0]["seconds"] > 2 * 86400
    from_its_64 = from_address("2001:db8:99:1::77")
    refused = client.post("/api/v2/generate/text/pop", json=body, headers=headers(owner_key), environ_base=from_its_64)
    assert refused.json["rc"] == "TimeoutIP"
    assert (
        client.delete(f"/api/v2/operations/block_worker_ipaddr/{worker_id}", headers=headers(moderator)).status_code
        == 200
    )
    assert (
        client.post("/api/v2/generate/text/pop", json=body, headers=headers(owner_key), environ_base=env).status_code
        == 200
    )


def test_refusals(client, make_user, moderator):
    _, key = make_user()
    assert time_out(client, key, CLIENT).json["rc"] == "NotModerator"
    assert time_out(client, None, CLIENT).json["rc"] == "NotModerator"
    assert client.get("/api/v2/operations/ipaddr", headers=headers(key)).json["rc"] == "NotModerator"
    for body, param in (
        ({"ipaddr": "not-an-address", "hours": 1}, "ipaddr"),
        ({"ipaddr": "10.0.0.0/4", "hours": 1}, "ipaddr"),
        ({"ipaddr": CLIENT, "hours": 0}, "hours"),
        ({"ipaddr": CLIENT, "hours": 10**9}, "hours"),
        ({"ipaddr": CLIENT}, "hours"),
    ):
        answer = client.post("/api/v2/operations/ipaddr", json=body, headers=headers(moderator))
        assert (answer.status_code, answer.json["param"]) == (400, param), body
    assert (
        client.put(
            "/api/v2/operations/block_worker_ipaddr/no-such-worker", json={"days": 1}, headers=headers(moderator)
        ).json["rc"]
        == "WorkerNotFound"
    )


def test_a_worker_without_a_recorded_address_cannot_be_blocked(client, make_user, runtime, moderator):
    owner, _ = make_user()
    with runtime.db.transaction() as session:  # checked in outside any request: no address to record
        worker_id = workers.check_in(session, owner, declaration("never-addressed")).id
    answer = client.put(
        f"/api/v2/operations/block_worker_ipaddr/{worker_id}", json={"days": 1}, headers=headers(moderator)
    )
    assert (answer.status_code, answer.json["param"]) == (400, "worker_id")
