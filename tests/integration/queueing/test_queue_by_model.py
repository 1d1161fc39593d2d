"""The queue by model (horde/queueing/model_rows.py): a backlog for a model no worker serves is read by no pop,
position, skipped count or waiting count of another model's worker, and keeps its place until a worker of its
model comes back. On SQLite and PostgreSQL, whose planners (without statistics, or with a plan made for any
models) were the reason the walks read each request by its key."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import insert, select, text
from sqlalchemy.orm import Session

from horde.chat import claim as chat_claim
from horde.chat import queue as chat_queue
from horde.chat.models import ChatRequest, ChatRequestModel
from horde.chat.snapshots import Snapshots
from horde.dispatch.pop import skipped_counts as chat_skipped_counts
from horde.queueing.model_rows import PLACE_COLUMNS
from horde.storage.database import table_of
from horde.text import eligibility, take
from horde.text import queue as text_queue
from horde.text.checkin import TextWorkerView
from horde.text.models import ANY_MODEL, TextRequest, TextRequestModel
from horde.workers.checkins import WorkerView
from horde.workers.models import Worker
from tests.support import native
from tests.support.text_api import text_pop, text_queued, text_status, text_submit

#: Requests for the offline model, copied in the database ahead of everything served.
BACKLOG = 300
OFFLINE = "offline-model"
#: The backlog is older than anything served, but within a waiting request's lifetime (the sweeper's).
BACKLOG_AGE_S = 300.0


def _copy_ahead(runtime, kind: type, model_rows: type, template_id: str, size: int) -> None:
    """`size` copies of the request `template_id` (and its model rows), older than anything queued: ahead."""
    requests, rows_table = table_of(kind), table_of(model_rows)
    with runtime.db.transaction() as session:
        template = dict(session.execute(select(requests).where(requests.c.id == template_id)).one()._mapping)
        start = template["created_at"] - dt.timedelta(seconds=BACKLOG_AGE_S)
        copies = [
            dict(template, id=str(uuid.uuid4()), created_at=start + dt.timedelta(milliseconds=index))
            for index in range(size)
        ]
        session.execute(insert(requests), copies)
        rows = [
            {"request_id": row["id"], "model": model, **{name: row[name] for name in PLACE_COLUMNS}}
            for row in copies
            for model in (row["models"] or [ANY_MODEL])
        ]
        session.execute(insert(rows_table), rows)


def _analyze(runtime) -> None:
    """PostgreSQL: fresh statistics, as its autovacuum gives a Horde's tables (SQLite's planner goes without)."""
    if runtime.db.is_postgresql:
        with runtime.db.autocommit() as session:
            session.execute(text("ANALYZE"))


@contextmanager
def cost_of_reads(runtime, table: str) -> Iterator[tuple[Session, Callable[[], int]]]:
    """A session (rolled back at the end) and what its statements have cost so far: on PostgreSQL the rows of
    `table` read (this transaction's counters), on SQLite the virtual machine's steps (it keeps no counters)."""
    with Session(runtime.db.engine) as session:
        connection = session.connection()
        if runtime.db.is_postgresql:
            reads = text(
                "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables "
                "WHERE relname = :table"
            )

            def spent() -> int:
                return int(connection.execute(reads, {"table": table}).scalar() or 0)

            yield session, spent
        else:
            steps = [0]

            def count() -> int:
                steps[0] += 1
                return 0

            connection.connection.dbapi_connection.set_progress_handler(count, 10)
            try:
                yield session, lambda: steps[0]
            finally:
                connection.connection.dbapi_connection.set_progress_handler(None, 0)
        session.rollback()


def _text_costs(runtime, worker_id: str, request_id: str) -> dict[str, int]:
    """What a text pop, a status's position, an empty pop's skipped counts and an admission's count cost."""
    costs = {}
    with cost_of_reads(runtime, "text_requests") as (session, spent):
        worker = TextWorkerView.of(session.get(Worker, worker_id))
        offer = eligibility.Offer(worker=worker, trusted=False, slow=False)
        request = session.get(TextRequest, request_id)
        before = spent()
        for name, call in (
            ("position", lambda: text_queue.position(session, request)),
            ("waiting", lambda: text_queue.waiting_count(session, ["m1"])),
            ("skipped", lambda: eligibility.skipped_counts(session, offer, BACKLOG + 1)),
            (
                "pop",
                lambda: take.next_request(session, offer, skip_locked=runtime.db.is_postgresql, prefer_users=[]),
            ),
        ):
            call()
            costs[name], before = spent() - before, spent()
    return costs


def test_a_text_backlog_for_an_offline_model_costs_the_served_models_calls_nothing(client, make_user, runtime):
    _, owner = make_user()
    _, rich = make_user(kudos=10_000)
    _, key = make_user(kudos=100)
    text_pop(client, owner)  # the worker of m1 checks in
    served = text_queued(client, key, prompt="served")
    with runtime.db.read() as session:
        worker_id = session.scalar(select(Worker.id).where(Worker.name == "tw1"))
    _analyze(runtime)
    alone = _text_costs(runtime, worker_id, served)
    _copy_ahead(runtime, TextRequest, TextRequestModel, text_queued(client, rich, models=[OFFLINE]), BACKLOG)
    _analyze(runtime)
    behind = _text_costs(runtime, worker_id, served)
    for call, cost in behind.items():  # the backlog is 300 requests: a walk through it would cost hundreds more
        assert cost <= 2 * alone[call] + 20, (call, alone, behind)
    assert text_status(client, served)["queue_position"] == 0  # the backlog is not ahead of it: other models
    job = text_pop(client, owner)
    assert job["payload"]["prompt"] == "served"


def test_a_chat_backlog_for_an_offline_model_costs_the_served_models_calls_nothing(client, make_user, runtime):
    runtime.snapshots = Snapshots(max_age_s=3600)  # the waiting total, taken once, is not the walk measured
    _, owner = make_user()
    _, rich = make_user(kudos=10_000)
    _, key = make_user(kudos=100)
    native.pop(client, owner, name="gone", models=(OFFLINE,))  # the model is known, its worker then goes away
    native.pop(client, owner)
    served = native.queued_id(client, key)
    offline = native.queued_id(client, rich, model=OFFLINE, availability_mode="wait")

    def costs() -> dict[str, int]:
        found = {}
        with cost_of_reads(runtime, "chat_requests") as (session, spent):
            worker = WorkerView.of(session.execute(select(Worker).where(Worker.name == "w1")).scalar_one())
            request = session.get(ChatRequest, served)
            runtime.snapshots.waiting_total(session)
            if runtime.db.is_postgresql:  # as a pop's look sets them (horde/dispatch/pop.py)
                session.execute(select(chat_claim.WALK_THE_INDEX, *chat_claim.PROBE_BY_KEY))
            before = spent()
            for name, call in (
                ("position", lambda: chat_queue.position(session, request)),
                ("waiting", lambda: chat_queue.waiting_for_models(session, ["m1"])),
                ("skipped", lambda: chat_skipped_counts(runtime, session, worker, False)),
                ("any", lambda: chat_claim.any_waiting_for(session, ["m1"])),
                (
                    "claim",
                    lambda: chat_claim.claim(
                        session, runtime.settings, worker, False, skip_locked=runtime.db.is_postgresql
                    ),
                ),
            ):
                call()
                found[name], before = spent() - before, spent()
        return found

    _analyze(runtime)
    alone = costs()
    _copy_ahead(runtime, ChatRequest, ChatRequestModel, offline, BACKLOG)
    _analyze(runtime)
    runtime.snapshots = Snapshots(max_age_s=3600)
    behind = costs()
    for call, cost in behind.items():
        assert cost <= 2 * alone[call] + 20, (call, alone, behind)
    job = native.pop(client, owner)
    assert job["id"] and job["payload"]["messages"][-1]["content"] == "Hello"


def test_an_empty_pops_skipped_counts_name_the_backlog_of_other_models(client, make_user, runtime):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner)
    text_queued(client, key, params={"max_length": 600})  # m1's, too long for the worker
    for _ in range(3):
        text_queued(client, key, models=[OFFLINE])
    assert text_pop(client, owner)["skipped"] == {"models": 3, "max_length": 1}


def test_a_request_for_an_offline_model_keeps_its_place_and_is_served_when_a_worker_comes_back(client, make_user):
    _, owner = make_user()
    _, early = make_user(kudos=100)
    _, late = make_user(kudos=100)
    text_pop(client, owner)
    first = text_queued(client, early, prompt="first", models=[OFFLINE])
    second = text_queued(client, late, prompt="second", models=[OFFLINE, "m2"])
    for _ in range(3):  # m1's traffic goes by
        text_queued(client, late, prompt="m1")
        text_submit(client, owner, text_pop(client, owner)["id"])
    assert (text_status(client, first)["queue_position"], text_status(client, second)["queue_position"]) == (0, 1)
    returned = text_pop(client, owner, name="back", models=[OFFLINE])
    assert returned["payload"]["prompt"] == "first" and returned["model"] == OFFLINE
    assert text_pop(client, owner, name="back", models=[OFFLINE])["payload"]["prompt"] == "second"


def test_a_request_of_any_model_is_any_workers_and_counted_in_each_models_queue(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner, name="a", models=["m1"])
    any_model = text_queued(client, key, prompt="any", models=[])
    mine = text_queued(client, key, prompt="mine", models=["m2"])
    assert text_status(client, mine)["queue_position"] == 1  # the request of any model is ahead in m2's queue
    job = text_pop(client, owner, name="b", models=["m2"])
    assert job["payload"]["prompt"] == "any"
    assert text_status(client, any_model)["processing"] == 1
    assert text_status(client, mine)["queue_position"] == 0


def test_an_ended_text_requests_model_rows_go_with_it(client, make_user, runtime):
    """The trigger on the request's state: done, cancelled and faulted requests leave no model row to walk."""
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner)
    done = text_queued(client, key, models=["m1", "m2"])
    cancelled = text_queued(client, key, models=[])
    waiting = text_queued(client, key, models=["m2"])
    text_submit(client, owner, text_pop(client, owner)["id"])
    client.delete(f"/api/v2/generate/text/status/{cancelled}")
    rows = table_of(TextRequestModel)
    with runtime.db.read() as session:
        left = session.execute(select(rows.c.request_id, rows.c.model).order_by(rows.c.model)).all()
        assert [tuple(row) for row in left] == [(waiting, "m2")]
        place = session.execute(select(*(rows.c[name] for name in PLACE_COLUMNS))).one()
        request = session.get(TextRequest, waiting)
        assert tuple(place) == (request.priority_class, request.priority, request.created_at)
    assert text_status(client, done)["done"]


def test_the_sweeper_drops_the_model_rows_an_ending_left(client, make_user, runtime):
    """On PostgreSQL the trigger leaves a row that a pop held as the request ended (waiting for it would deadlock
    with that pop); the next sweep drops it, and no live request's row."""
    from horde.text import model_rows as text_model_rows

    _, key = make_user(kudos=100)
    ended, live = text_queued(client, key), text_queued(client, key)
    client.delete(f"/api/v2/generate/text/status/{ended}")
    rows = table_of(TextRequestModel)
    with runtime.db.transaction() as session:  # the row the trigger could not take
        request = session.get(TextRequest, ended)
        place = {name: getattr(request, name) for name in PLACE_COLUMNS}
        session.execute(insert(rows), [{"request_id": ended, "model": "m1", **place}])
    with runtime.db.autocommit() as session:
        assert text_model_rows.forget_ended(session) == 1
    with runtime.db.read() as session:
        assert session.execute(select(rows.c.request_id)).scalars().all() == [live]
