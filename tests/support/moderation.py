"""Moderators, admins and their calls, through the app's test client (docs/reference/moderation.md)."""

from __future__ import annotations

from horde.accounts import roles


def with_role(runtime, make_user, role: str, **user) -> tuple[object, str]:
    """A new user of `role` ("moderator", "admin") and its key."""
    made, key = make_user(**user)
    with runtime.db.transaction() as session:
        roles.set_role(session, made.username, role)
    return made, key


def headers(key: str | None) -> dict:
    return {"apikey": key} if key else {}


def put_user(client, key: str | None, user_id: int, **body):
    return client.put(f"/api/v2/users/{user_id}", json=body, headers=headers(key))


def get_user(client, key: str | None, user_id: int):
    return client.get(f"/api/v2/users/{user_id}", headers=headers(key))


def delete_user(client, key: str | None, user_id: int):
    return client.delete(f"/api/v2/users/{user_id}", headers=headers(key))


def set_modes(client, key: str | None, **modes):
    return client.put("/api/v2/status/modes", json=modes, headers=headers(key))


def time_out(client, key: str | None, ipaddr: str, hours: int = 1, **body):
    return client.post(
        "/api/v2/operations/ipaddr", json={"ipaddr": ipaddr, "hours": hours, **body}, headers=headers(key)
    )


def from_address(address: str) -> dict:
    """The test client's environ for a call from `address`."""
    return {"REMOTE_ADDR": address}


def audit(client, key: str, **query) -> dict:
    answer = client.get("/api/v2/operations/audit", query_string=query, headers=headers(key))
    assert answer.status_code == 200, answer.json
    return answer.json
