"""POST /api/v2/register and the AI Horde's form (POST /register) on a real database: the account, its key, its first
kudos on the ledger; the modes, the invite codes, the per-address limit; and that a refusal leaves nothing behind."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from sqlalchemy import func, select, update

from horde.accounts.models import KudosEntry, User
from horde.config import Settings
from horde.registration import invites
from horde.registration.models import Invite, RegistrationCount
from tests.support.ledger import assert_balances_match_ledger

KEY_MARKER = re.compile(r'<code class="ah-api-key">([^<]+)</code>')


@pytest.fixture
def settings(database_url):
    return Settings.from_env({}, database_url=database_url, registrations_per_address_per_day=100)


def _counts(runtime) -> tuple[int, int, int]:
    """Users (but the anonymous one), ledger entries, and registrations counted."""
    with runtime.db.read() as session:
        users = session.scalar(select(func.count()).select_from(User).where(User.anonymous.is_(False)))
        entries = session.scalar(select(func.count()).select_from(KudosEntry))
        counted = session.scalar(select(func.coalesce(func.sum(RegistrationCount.registered), 0)))
    return users, entries, counted


def _invite(runtime, uses: int = 1, days: int | None = None) -> str:
    with runtime.db.transaction() as session:
        return invites.create(session, uses, days=days)


def _mode(runtime, **changes) -> None:
    runtime.settings = runtime.settings.replace(**changes)


def test_a_registration_makes_an_account_whose_key_works(client, runtime):
    answer = client.post("/api/v2/register", json={"username": "  Alice  "})
    assert answer.status_code == 201, answer.json
    body = answer.json
    assert set(body) == {"id", "username", "api_key"}
    assert body["username"] == f"Alice#{body['id']}"
    me = client.get("/api/v2/find_user", headers={"apikey": body["api_key"]}).json
    assert me["username"] == body["username"] and me["id"] == body["id"]
    with runtime.db.read() as session:
        stored = session.scalar(select(User.api_key_hash).where(User.id == body["id"]))
    assert stored != body["api_key"] and len(stored) == 64  # only the hash is kept


def test_names_repeat_and_the_id_tells_them_apart(client, runtime):
    first = client.post("/api/v2/register", json={"username": "twin"}).json
    second = client.post("/api/v2/register", json={"username": "twin"}).json
    assert first["id"] != second["id"] and first["api_key"] != second["api_key"]
    assert {first["username"], second["username"]} == {f"twin#{first['id']}", f"twin#{second['id']}"}
    for made in (first, second):
        found = client.get(f"/api/v2/users/{made['id']}").json
        assert found["username"] == made["username"]


def test_a_new_account_starts_with_the_configured_kudos_on_the_ledger(client, runtime):
    _mode(runtime, new_user_kudos=25)
    made = client.post("/api/v2/register", json={"username": "rich"}).json
    assert client.get("/api/v2/find_user", headers={"apikey": made["api_key"]}).json["kudos"] == 25
    with runtime.db.read() as session:
        entries = session.execute(select(KudosEntry.amount, KudosEntry.kind).where(KudosEntry.user_id == made["id"]))
        assert [tuple(entry) for entry in entries] == [(25, "grant")]
    assert_balances_match_ledger(runtime.db)


@pytest.mark.parametrize(
    "username,says",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("x" * 51, "at most 50"),
        ("bad\x07bell", "control or invisible"),
        ("new\nline", "control or invisible"),
        ("zero\u200bwidth", "control or invisible"),
        ("name#12", "'#'"),
        (12, "Not a valid string"),
        (None, "Field may not be null"),
    ],
)
def test_a_bad_name_is_refused_naming_username_and_leaves_nothing(client, runtime, username, says):
    before = _counts(runtime)
    answer = client.post("/api/v2/register", json={"username": username})
    assert answer.status_code == 400, answer.json
    assert answer.json["rc"] == "BadRequest" and answer.json["param"] == "username"
    assert says in answer.json["message"]
    assert _counts(runtime) == before


def test_fifty_characters_are_enough(client):
    assert client.post("/api/v2/register", json={"username": "y" * 50}).status_code == 201


def test_a_body_that_is_not_an_object_or_lacks_the_name_is_refused(client):
    assert client.post("/api/v2/register", json=["x"]).status_code == 400
    missing = client.post("/api/v2/register", json={"name": "x"})
    assert missing.status_code == 400 and missing.json["param"] == "username"
    long_code = client.post("/api/v2/register", json={"username": "x", "invite_code": "c" * 65})
    assert long_code.status_code == 400 and long_code.json["param"] == "invite_code"


def test_closed_registration_refuses_and_makes_nothing(client, runtime):
    _mode(runtime, registration="closed")
    before = _counts(runtime)
    answer = client.post("/api/v2/register", json={"username": "late"})
    assert (answer.status_code, answer.json["rc"]) == (403, "RegistrationClosed")
    assert client.get("/api/v2/register").json["registration"] == "closed"
    assert _counts(runtime) == before


def test_by_invitation_a_code_is_good_for_its_uses_and_no_more(client, runtime):
    _mode(runtime, registration="invite")
    code = _invite(runtime, uses=2)
    for name in ("one", "two"):
        made = client.post("/api/v2/register", json={"username": name, "invite_code": code})
        assert made.status_code == 201, made.json
    before = _counts(runtime)
    used_up = client.post("/api/v2/register", json={"username": "three", "invite_code": code})
    assert (used_up.status_code, used_up.json["rc"]) == (403, "InvalidInviteCode")
    assert _counts(runtime) == before
    with runtime.db.read() as session:
        assert session.scalar(select(Invite.used)) == 2


@pytest.mark.parametrize("body", [{}, {"invite_code": None}, {"invite_code": ""}, {"invite_code": "not-a-code"}])
def test_by_invitation_a_missing_or_unknown_code_is_refused(client, runtime, body):
    _mode(runtime, registration="invite")
    _invite(runtime)
    before = _counts(runtime)
    answer = client.post("/api/v2/register", json={"username": "guest", **body})
    assert (answer.status_code, answer.json["rc"]) == (403, "InvalidInviteCode")
    assert _counts(runtime) == before


def test_an_expired_or_revoked_invite_is_refused(client, runtime):
    _mode(runtime, registration="invite")
    code = _invite(runtime, uses=5, days=1)
    with runtime.db.transaction() as session:
        session.execute(update(Invite).values(expires_at=dt.datetime(2000, 1, 1)))
    assert client.post("/api/v2/register", json={"username": "x", "invite_code": code}).json["rc"] == (
        "InvalidInviteCode"
    )
    revoked = _invite(runtime, uses=5)
    with runtime.db.transaction() as session:
        invite_id = session.scalar(select(Invite.id).order_by(Invite.id.desc()).limit(1))
        assert invites.revoke(session, invite_id)
    assert client.post("/api/v2/register", json={"username": "x", "invite_code": revoked}).status_code == 403


def test_a_refusal_after_the_invite_gives_its_use_back(client, runtime):
    """The address's limit refuses after the code's use was taken, in the same transaction: the use comes back."""
    _mode(runtime, registration="invite", registrations_per_address_per_day=1)
    code = _invite(runtime, uses=5)
    assert client.post("/api/v2/register", json={"username": "a", "invite_code": code}).status_code == 201
    before = _counts(runtime)
    refused = client.post("/api/v2/register", json={"username": "b", "invite_code": code})
    assert (refused.status_code, refused.json["rc"]) == (429, "TooManyRegistrations")
    assert _counts(runtime) == before
    with runtime.db.read() as session:
        assert session.scalar(select(Invite.used)) == 1


def test_one_address_makes_at_most_the_daily_number(client, runtime):
    _mode(runtime, registrations_per_address_per_day=3)
    for number in range(3):
        assert client.post("/api/v2/register", json={"username": f"n{number}"}).status_code == 201
    before = _counts(runtime)
    refused = client.post("/api/v2/register", json={"username": "n3"})
    assert (refused.status_code, refused.json["rc"]) == (429, "TooManyRegistrations")
    assert 1 <= int(refused.headers["Retry-After"]) <= 86_400
    assert refused.json["metadata"] == {"registrations_per_day": 3}
    assert _counts(runtime) == before
    other = client.post("/api/v2/register", json={"username": "n3"}, environ_base={"REMOTE_ADDR": "192.0.2.7"})
    assert other.status_code == 201  # another address has a count of its own


def test_the_limit_counts_the_address_the_proxies_name(client, runtime):
    _mode(runtime, registrations_per_address_per_day=1, trusted_proxy_hops=1)
    hop = {"X-Forwarded-For": "198.51.100.4"}
    assert client.post("/api/v2/register", json={"username": "p"}, headers=hop).status_code == 201
    assert client.post("/api/v2/register", json={"username": "p"}, headers=hop).status_code == 429
    other = {"X-Forwarded-For": "198.51.100.5"}
    assert client.post("/api/v2/register", json={"username": "p"}, headers=other).status_code == 201


def test_a_limit_of_zero_refuses_every_registration(client, runtime):
    _mode(runtime, registrations_per_address_per_day=0)
    assert client.post("/api/v2/register", json={"username": "z"}).status_code == 429
    assert _counts(runtime)[0] == 0


def test_the_status_says_what_the_page_offers(client, runtime):
    assert client.get("/api/v2/register").json == {
        "registration": "open",
        "oidc": {"enabled": False, "login_url": "/oidc/login", "provider": ""},
    }
    _mode(runtime, registration="invite", oidc_issuer="https://id.example.org/", oidc_client_id="horde")
    assert client.get("/api/v2/register").json["oidc"]["enabled"] is False  # no secret: still off
    _mode(runtime, oidc_client_secret="s3cret", oidc_provider_name="Example ID")
    assert client.get("/api/v2/register").json == {
        "registration": "invite",
        "oidc": {"enabled": True, "login_url": "/oidc/login", "provider": "Example ID"},
    }


def test_the_ai_hordes_form_answers_the_key_in_its_marker(client, runtime):
    page = client.get("/register")
    assert page.status_code == 200 and 'name="username"' in page.text
    answer = client.post("/register", data={"username": "stress_requestor_1a2b3c4d"})
    assert answer.status_code == 200 and answer.content_type.startswith("text/html")
    key = KEY_MARKER.search(answer.text).group(1)
    me = client.get("/api/v2/find_user", headers={"apikey": key}).json
    assert me["username"].startswith("stress_requestor_1a2b3c4d#")


def test_the_forms_refusals_are_pages_with_their_status_and_escaped(client, runtime):
    refused = client.post("/register", data={"username": "<script>alert(1)</script>#"})
    assert refused.status_code == 400 and KEY_MARKER.search(refused.text) is None
    assert "<script>" not in refused.text and "&lt;script&gt;" in refused.text
    assert "must not hold &#x27;#&#x27;" in refused.text
    _mode(runtime, registrations_per_address_per_day=1)
    assert client.post("/register", data={"username": "ok"}).status_code == 200
    limited = client.post("/register", data={"username": "again"})
    assert limited.status_code == 429 and limited.headers["Retry-After"]
    _mode(runtime, registration="invite")
    assert 'name="invite_code"' in client.get("/register").text
    assert client.post("/register", data={"username": "x", "invite_code": "nope"}).status_code == 403
    _mode(runtime, registration="closed")
    closed = client.post("/register", data={"username": "x"})
    assert closed.status_code == 403 and "not taking new accounts" in closed.text


def test_markup_in_a_name_is_kept_and_shown_escaped(client):
    made = client.post("/register", data={"username": "<b>bold</b>"})
    assert made.status_code == 200
    assert "&lt;b&gt;bold&lt;/b&gt;#" in made.text and "<b>bold</b>" not in made.text
