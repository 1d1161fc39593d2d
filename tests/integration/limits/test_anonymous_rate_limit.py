"""The anonymous user's rate limit counts per client address, so one client cannot lock out the rest."""

from __future__ import annotations

import pytest

from tests.integration.helpers import pop

BODY = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}]}


@pytest.fixture
def limited(client, make_user, runtime):
    _, key = make_user("owner")
    pop(client, key, threads=50)
    runtime.settings = runtime.settings.replace(rate_limit_per_minute=3)
    return key


def native(client, address, forwarded=None, key=None):
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    if key:
        headers["apikey"] = key
    return client.post("/api/v2/generate/chat/async", json=BODY, headers=headers, environ_base={"REMOTE_ADDR": address})


def front(client, address):
    return client.post("/v1/chat/completions", json=dict(BODY, stream=True), environ_base={"REMOTE_ADDR": address})


def test_one_anonymous_client_at_its_limit_does_not_lock_out_another(client, limited):
    assert [native(client, "203.0.113.7").status_code for _ in range(3)] == [202] * 3
    refused = native(client, "203.0.113.7")
    assert (refused.status_code, refused.json["rc"]) == (429, "rate_limit_exceeded")
    assert "per client address" in refused.json["message"] and refused.headers["Retry-After"] == "60"
    assert native(client, "198.51.100.9").status_code == 202
    streamed = front(client, "203.0.113.7")
    assert (streamed.status_code, streamed.json["error"]["code"]) == (429, "rate_limit_exceeded")
    other = front(client, "198.51.100.9")
    assert other.status_code == 200
    other.close()


def test_forwarded_for_is_ignored_without_trusted_hops(client, limited):
    """A client cannot escape its limit by naming other addresses in X-Forwarded-For."""
    for index in range(3):
        assert native(client, "203.0.113.7", forwarded=f"10.0.0.{index}").status_code == 202
    assert native(client, "203.0.113.7", forwarded="10.0.0.99").status_code == 429


def test_trusted_hops_pick_the_address_the_proxies_saw(client, limited, runtime):
    runtime.settings = runtime.settings.replace(trusted_proxy_hops=1)
    proxy = "192.0.2.1"
    for _ in range(3):  # the client prepends a spoofed hop; the proxy appends the address it saw
        assert native(client, proxy, forwarded="6.6.6.6, 203.0.113.7").status_code == 202
    assert native(client, proxy, forwarded="7.7.7.7, 203.0.113.7").status_code == 429
    assert native(client, proxy, forwarded="203.0.113.8").status_code == 202


def test_a_registered_user_keeps_one_limit_across_addresses(client, limited, make_user):
    _, key = make_user("alice")
    for index in range(3):
        assert native(client, f"203.0.113.{index}", key=key).status_code == 202
    assert native(client, "203.0.113.99", key=key).status_code == 429
