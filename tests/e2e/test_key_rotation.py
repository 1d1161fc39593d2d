"""A replaced key is refused by every process from the next request on: two server processes on PostgreSQL with
Redis between them; the old key is cached by the other process, the key is replaced on one, and the old key is
sent to the other the moment the answer arrives, many rounds."""

from __future__ import annotations

import pytest
import requests

from tests.support.databases import redis_url
from tests.support.harness import postgres_servers

ROUNDS = 40
HTTP_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def horde():
    if not redis_url():
        pytest.skip("processes hear a replaced key at once through Redis: it needs HORDE_TEST_REDIS_URL")
    with postgres_servers() as harness:
        yield harness


def _me(server, key: str) -> requests.Response:
    return requests.get(f"{server.url}/api/v2/find_user", headers={"apikey": key}, timeout=HTTP_TIMEOUT_S)


def test_the_old_key_is_refused_on_the_other_process_at_once(horde):
    session = requests.Session()
    for round_number in range(ROUNDS):
        rotating, other = horde.servers[round_number % 2], horde.servers[(round_number + 1) % 2]
        old = horde.user(kudos=1)
        user_id = _me(other, old).json()["id"]  # the other process now holds the old key in its cache
        assert _me(other, old).status_code == 200
        answer = session.post(
            f"{rotating.url}/api/v2/users/{user_id}/api_key", headers={"apikey": old}, timeout=HTTP_TIMEOUT_S
        )
        assert answer.status_code == 200, answer.text
        refused = session.get(f"{other.url}/api/v2/find_user", headers={"apikey": old}, timeout=HTTP_TIMEOUT_S)
        assert (refused.status_code, refused.json()["rc"]) == (401, "InvalidAPIKey"), round_number
        new = answer.json()["api_key"]
        assert _me(other, new).json()["id"] == user_id
        assert _me(rotating, old).status_code == 401
