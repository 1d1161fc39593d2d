"""Queue order: users with kudos before the rest (anonymous included), then kudos, then age."""

from tests.support.native import pop, queued_id, submit


def test_users_with_kudos_first_then_kudos_then_age(client, make_user):
    _, worker_key = make_user("owner")
    pop(client, worker_key)  # the model becomes known and served
    _, poor_key = make_user("poor", kudos=0)
    _, rich_key = make_user("rich", kudos=500)
    _, richer_key = make_user("richer", kudos=900)
    anonymous_first = queued_id(client, "0000000000")
    poor = queued_id(client, poor_key)
    rich_old = queued_id(client, rich_key)
    rich_new = queued_id(client, rich_key)
    richer = queued_id(client, richer_key)

    served = []
    for _ in range(5):
        job = pop(client, worker_key)
        served.append(job)
        assert submit(client, worker_key, job["id"]).status_code == 200

    order = [_request_of(client, worker_key, job) for job in served]
    assert order[:3] == [richer, rich_old, rich_new]
    assert set(order[3:]) == {anonymous_first, poor}
    assert order[3] == anonymous_first  # same class and kudos: the older first


def _request_of(client, key, job):
    from horde.chat.models import ChatJob

    runtime = client.application.extensions["horde"]
    with runtime.db.transaction() as session:
        return session.get(ChatJob, job["id"]).request_id
