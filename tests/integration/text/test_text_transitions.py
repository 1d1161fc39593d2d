"""A cancelled text request is never handed out again, on both databases (the races themselves, on PostgreSQL
with two processes: tests/e2e/test_text_races.py)."""

from __future__ import annotations

from sqlalchemy import update

from horde.text.models import TextRequest
from tests.support.text_api import find_user, text_pop, text_queued, text_status, text_submit


def test_a_claim_never_takes_from_a_cancelled_request(client, make_user, runtime):
    """Whatever else its row says: the claim's compare-and-set names `cancelled` itself."""
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner)
    request_id = text_queued(client, key, params={"n": 2})
    client.delete(f"/api/v2/generate/text/status/{request_id}")
    with runtime.db.transaction() as session:  # a row a lost race could once leave: cancelled, yet waiting
        session.execute(update(TextRequest).where(TextRequest.id == request_id).values(state="waiting", waiting=2))
    assert text_pop(client, owner)["ids"] == []


def test_a_generation_that_faults_after_the_cancel_leaves_the_request(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner)
    request_id = text_queued(client, key, params={"n": 2})
    first, second = text_pop(client, owner, amount=2)["ids"]
    client.delete(f"/api/v2/generate/text/status/{request_id}")
    assert text_submit(client, owner, first, "", state="faulted").json == {"reward": 0}
    assert text_pop(client, owner)["ids"] == []
    reward = text_submit(client, owner, second, "x" * 40).json["reward"]  # it ran before the cancel: charged
    status = text_status(client, request_id)
    assert (status["waiting"], status["processing"], status["finished"], status["restarted"]) == (0, 0, 1, 0)
    assert status["done"] and status["kudos"] == reward
    assert find_user(client, key)["kudos"] == 100 - reward
