"""A delivered answer's release (one holder less, delivered) is a write nothing waits for: on gevent a busy
process writes those that arrive while one runs in one statement, each request released as often as it was."""

from sqlalchemy import select

from horde.chat.models import ChatRequest
from horde.events.drain import DRAIN
from horde.oai import idempotency
from tests.support.native import pop, queued_id
from tests.support.processes import wait_until
from tests.support.statements import statements

JOIN_S = 10


def holders_and_delivered(runtime, request_ids):
    with runtime.db.read() as session:
        rows = session.execute(
            select(ChatRequest.id, ChatRequest.holders, ChatRequest.delivered).where(ChatRequest.id.in_(request_ids))
        ).all()
    return {request_id: (holders, delivered) for request_id, holders, delivered in rows}


def test_releases_that_arrive_while_one_runs_share_a_statement_and_a_request_held_twice_is_released_twice(
    runtime, client, make_user
):
    _, key = make_user("client", kudos=100)
    pop(client, key, "w1")  # a worker online, so the requests queue
    first, second, third = (queued_id(client, key) for _ in range(3))
    for request_id, holders in ((first, 2), (second, 1), (third, 1)):
        idempotency.hold(runtime, request_id, holders)
    releases = idempotency.delivered_releases(runtime, ChatRequest, background=True)
    in_flight = DRAIN.requests_in_flight
    with statements(runtime) as seen:
        # Hold the third request's row (SQLite: the write lock) so that the writer's first release waits
        # while the other three arrive.
        with runtime.db.transaction() as session:
            session.execute(select(ChatRequest.id).where(ChatRequest.id == third).with_for_update()).one()
            idempotency.release_delivered(runtime, third)
            wait_until(lambda: not releases._pending, timeout_s=JOIN_S, what="the writer's first turn")
            for request_id in (first, second, first):
                idempotency.release_delivered(runtime, request_id)
        wait_until(lambda: DRAIN.requests_in_flight == in_flight, timeout_s=JOIN_S, what="the releases")
    assert releases is idempotency.delivered_releases(runtime, ChatRequest)
    assert holders_and_delivered(runtime, [first, second, third]) == {
        first: (0, True),
        second: (0, True),
        third: (0, True),
    }
    updates = [statement for statement in seen if statement.startswith("update chat_requests")]
    # The third alone, then the first and second together, then the first's second release: three statements
    # for four releases (the first's two never share one).
    assert len(updates) == 3
    assert all("holders" in statement and "delivered" in statement for statement in updates)


def test_outside_gevent_a_release_is_written_before_it_returns(runtime, client, make_user):
    _, key = make_user("client", kudos=100)
    pop(client, key, "w1")
    request_id = queued_id(client, key)
    idempotency.hold(runtime, request_id, 1)
    idempotency.release_delivered(runtime, request_id)
    assert holders_and_delivered(runtime, [request_id]) == {request_id: (0, True)}
