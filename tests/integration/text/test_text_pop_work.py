"""A text pop does only the work that can change something, as chat's does: no write for an unchanged
check-in, the worker's key from the identity cache on the submit too, and an announced job wakes one
long-polling worker, which passes it on when it cannot take it."""

import datetime as dt
import threading

from sqlalchemy import select, update

from horde.text.pop import ANY_MODEL_CHANNEL, text_jobs_channel
from horde.timeutil import utcnow
from horde.workers.models import Worker
from tests.support.processes import wait_until
from tests.support.statements import statements
from tests.support.text_api import text_pop, text_queued, text_status, text_submit

LONG_POLL_S = 30


def writes(seen):
    return [statement for statement in seen if statement.startswith(("insert", "update", "delete"))]


def text_pop_at(runtime, name="tw1"):
    with runtime.db.read() as session:
        return session.scalar(select(Worker.text_pop_at).where(Worker.name == name))


def test_a_repeated_text_pop_that_changes_nothing_writes_nothing(client, make_user, runtime):
    _, key = make_user("owner")
    text_pop(client, key)
    with statements(runtime) as seen:
        assert text_pop(client, key)["id"] is None
    assert writes(seen) == []
    assert not [statement for statement in seen if "from users" in statement]
    # The only read of the worker's row is the maintenance probe (horde/workers/duty.py) in the statement that
    # counts its busy threads: no check-in reads it.
    assert all("from chat_jobs" in statement for statement in seen if "from workers" in statement)


def test_changed_text_declarations_are_written_at_once_and_used_by_the_claim(client, make_user, runtime):
    _, owner = make_user("owner")
    _, key = make_user("client", kudos=100)
    text_pop(client, owner)
    request_id = text_queued(client, key, params={"max_length": 300})
    with statements(runtime) as seen:
        assert text_pop(client, owner, max_length=200)["id"] is None  # too short for the request now
    assert any(statement.startswith("update workers") for statement in seen)
    with runtime.db.read() as session:
        assert session.scalar(select(Worker.text_max_length)) == 200
    job = text_pop(client, owner)  # back to 512: written again, and the claim uses it
    assert job["id"] and job["payload"]["max_length"] == 300
    assert text_status(client, request_id)["processing"] == 1


def test_text_pop_at_is_refreshed_once_the_refresh_interval_passed(client, make_user, runtime):
    _, key = make_user("owner")
    text_pop(client, key)
    with runtime.db.transaction() as session:
        session.execute(update(Worker).values(text_pop_at=utcnow() - dt.timedelta(seconds=60)))
    text_pop(client, key)
    assert utcnow() - text_pop_at(runtime) > dt.timedelta(seconds=30)  # not due yet: nothing written
    runtime.text_checkins.refresh_s = 0
    text_pop(client, key)
    assert utcnow() - text_pop_at(runtime) < dt.timedelta(seconds=30)


def claimed_job(client, make_user) -> tuple[str, dict]:
    """A worker owner's key and the job its text pop claimed of a client's queued request."""
    _, owner = make_user("owner")
    _, key = make_user("client", kudos=100)
    text_queued(client, key)
    return owner, text_pop(client, owner)


def test_a_text_submit_with_a_key_seen_lately_reads_no_user(client, make_user, runtime):
    owner, job = claimed_job(client, make_user)
    with statements(runtime) as seen:
        answer = text_submit(client, owner, job["id"])
    assert answer.status_code == 200 and answer.json["reward"] > 0
    assert not [statement for statement in seen if "from users" in statement], seen


class Poller:
    """A text pop long-polling in a thread of its own, through its own test client."""

    def __init__(self, client, key, name, **declarations):
        self.answer = None
        self.thread = threading.Thread(
            target=self._pop, args=(client.application.test_client(), key, name, declarations), daemon=True
        )
        self.thread.start()

    def _pop(self, client, key, name, declarations):
        self.answer = text_pop(client, key, name=name, wait=LONG_POLL_S, **declarations)


def waiting_pollers(runtime) -> int:
    return len(runtime.bus._waiting.get(ANY_MODEL_CHANNEL, ()))


def start_polling(client, runtime, key, names, **declarations) -> list[Poller]:
    pollers = []
    for name in names:  # one at a time: the first waits longest, so it is woken first
        text_pop(client, key, name=name, **declarations)  # checked in, so the long-poll writes nothing
        expected = waiting_pollers(runtime) + 1
        pollers.append(Poller(client, key, name, **declarations))
        wait_until(lambda expected=expected: waiting_pollers(runtime) == expected, what="the text pop to wait")
    return pollers


def test_an_announced_text_job_wakes_one_long_polling_worker(client, make_user, runtime):
    _, owner = make_user("owner")
    _, key = make_user("client", kudos=100)
    first, second = start_polling(client, runtime, owner, ["tw1", "tw2"])
    with statements(runtime) as seen:
        request_id = text_queued(client, key)
        first.thread.join(LONG_POLL_S)
        assert first.answer["id"] is not None and text_status(client, request_id)["processing"] == 1
    assert second.thread.is_alive() and waiting_pollers(runtime) == 1  # never woken: still in its wait
    looks = [statement for statement in seen if statement.startswith("select") and "text_requests.id" in statement]
    assert len([statement for statement in looks if "limit" in statement]) == 1, looks  # the woken poller's only
    text_queued(client, key)  # the next one is the second poller's
    second.thread.join(LONG_POLL_S)
    assert second.answer["id"] is not None


def test_a_woken_text_worker_that_cannot_take_the_job_passes_it_on(client, make_user, runtime):
    _, owner = make_user("owner")
    _, key = make_user("client", kudos=100)
    (short,) = start_polling(client, runtime, owner, ["short"], max_length=16)
    (long,) = start_polling(client, runtime, owner, ["long"])
    request_id = text_queued(client, key, params={"max_length": 100})
    long.thread.join(LONG_POLL_S)
    assert long.answer["id"] is not None and text_status(client, request_id)["processing"] == 1
    assert short.thread.is_alive()  # woken first, it could not take the job and went back to waiting
    text_queued(client, key, params={"max_length": 16})
    short.thread.join(LONG_POLL_S)
    assert short.answer["id"] is not None


def test_a_text_submit_reads_its_job_worker_and_request_in_one_statement(client, make_user, runtime):
    owner, job = claimed_job(client, make_user)
    with statements(runtime) as seen:
        assert text_submit(client, owner, job["id"]).status_code == 200
    reads = [statement for statement in seen if statement.startswith("select")]
    assert len(reads) == 2, reads  # the job with its worker's owner and its request's price inputs; then the request
    assert "join workers" in reads[0] and reads[1].startswith("select text_requests.")


def test_a_generation_faulted_by_its_submit_is_announced_to_the_long_polling_workers(client, make_user, runtime):
    _, owner = make_user("owner")
    _, key = make_user("client", kudos=100)
    request_id = text_queued(client, key)
    job = text_pop(client, owner)
    with runtime.bus.subscribe(text_jobs_channel("m1")) as listener:  # hears every announcement on the channel
        assert text_submit(client, owner, job["id"], state="faulted").status_code == 200
        assert text_status(client, request_id)["waiting"] == 1
        assert listener.pending, "the generation waits again: the workers of its model hear of it"
