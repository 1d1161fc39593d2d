"""A text admission's round trips (issue 12), counted (never timed), and the per-process view it decides on.

The OpenAI front's /v1/completions admission read the caller's row, every worker's models, the online workers,
their owners, the typical job and the waiting count twice before its INSERT. With the per-process views warm it
is now one INSERT that takes the caller's turn and counts (PostgreSQL: in autocommit), as on chat; a refusal or a
native "no worker" warning is decided on the workers as they are now.
"""

from __future__ import annotations

import pytest

from horde import errors
from horde.accounts.identity import Identity
from horde.accounts.rate_limit import RATE_TURN_FUNCTION
from horde.app import create_app
from horde.chat.snapshots import Snapshots
from horde.runtime import Runtime
from horde.text import fail_fast, service
from horde.text.models import TextRequest
from tests.support.statements import statements
from tests.support.text_api import text_pop

#: The per-process views (a second in production) last the whole test: what is cached stays cached.
CACHED_S = 3600
FRONT = fail_fast.FrontOptions()
BODY = {"models": ["m1"], "prompt": "Once upon a time", "params": {"max_length": 16}}


def _admit(runtime, user, body=BODY, front=FRONT):
    return service.create(runtime, Identity.of(user), {**body, "params": dict(body["params"])}, front=front)


def _stored(runtime, request_id: str) -> TextRequest:
    with runtime.db.read() as session:
        request = session.get(TextRequest, request_id)
        assert request is not None
        return request


def test_a_front_admission_reads_neither_the_caller_nor_the_workers_once_the_views_are_warm(runtime, client, make_user):
    _, owner = make_user("owner")
    text_pop(client, owner)
    user, _ = make_user("client", kudos=100)
    runtime.snapshots = Snapshots(max_age_s=CACHED_S)
    _admit(runtime, user)  # the per-process views are warm from here

    with statements(runtime) as seen, statements(runtime, transactional_only=True) as in_a_transaction:
        admitted = _admit(runtime, user)

    seen = [s for s in seen if not s.startswith(("begin", "commit", "rollback"))]
    if runtime.db.is_postgresql:  # the INSERT takes the caller's turn itself, and runs alone in autocommit
        assert [s.split(" (")[0] for s in seen] == ["with created as"] and in_a_transaction == [], seen
        assert f"{RATE_TURN_FUNCTION}(" in seen[0] and "counted as (insert into rate_counts" in seen[0]
    else:
        assert [s.split(" (")[0] for s in seen] == [
            "insert into text_requests",
            "insert into rate_counts",
            "insert into text_request_models",
        ]
    assert admitted.request is not None
    stored = _stored(runtime, admitted.request.id)
    assert stored.params["max_context_length"] == 4096  # the worker's context, from the view
    decided = (stored.priority, stored.priority_class, stored.upfront_paid)
    assert decided == (admitted.request.priority, admitted.request.priority_class, admitted.request.upfront_paid)
    assert decided == (100, 0, True)


def test_the_insert_decides_priority_and_upfront_payment_from_the_balance(runtime, client, make_user):
    _, owner = make_user("owner")
    text_pop(client, owner)
    poor, _ = make_user("poor", kudos=1)
    broke, _ = make_user("broke", kudos=0)

    costly = dict(BODY, params={"max_length": 512})
    low = _admit(runtime, poor, costly).request
    none = _admit(runtime, broke, costly).request

    assert low is not None and none is not None
    assert low.kudos_estimate > 1, "the request costs more than the poor caller has"
    assert (_stored(runtime, low.id).priority, _stored(runtime, low.id).upfront_paid) == (1, False)
    assert (_stored(runtime, low.id).priority_class, _stored(runtime, none.id).priority_class) == (0, 1)
    assert (none.priority, none.priority_class, none.upfront_paid) == (0, 1, False)


def test_a_text_worker_checked_in_by_another_process_serves_the_very_next_front_request(
    runtime, client, make_user, settings
):
    """The view is a second old at most; a refusal reads the workers afresh, so a worker that another process
    checked in a moment ago is not missed."""
    _, owner = make_user("owner")
    text_pop(client, owner)
    user, _ = make_user("client", kudos=100)
    runtime.snapshots = Snapshots(max_age_s=CACHED_S)
    _admit(runtime, user)  # this process's view: one text worker, of m1
    other_process = Runtime.build(settings)
    try:
        text_pop(create_app(runtime=other_process).test_client(), owner, name="tw2", models=["m2"])
    finally:
        other_process.close()

    admitted = _admit(runtime, user, dict(BODY, models=["m2"]))

    assert admitted.request is not None and admitted.request.models == ["m2"]


def test_the_native_warning_is_decided_on_the_workers_as_they_are_now(runtime, client, make_user, settings):
    _, owner = make_user("owner")
    text_pop(client, owner)
    user, _ = make_user("client", kudos=100)
    runtime.snapshots = Snapshots(max_age_s=CACHED_S)
    assert _admit(runtime, user, front=None).message is None
    assert "No text worker serving m2 is online" in (
        _admit(runtime, user, dict(BODY, models=["m2"]), None).message or ""
    )
    other_process = Runtime.build(settings)
    try:
        text_pop(create_app(runtime=other_process).test_client(), owner, name="tw2", models=["m2"])
    finally:
        other_process.close()

    assert _admit(runtime, user, dict(BODY, models=["m2"]), None).message is None


def test_a_declaration_changed_in_this_process_applies_to_the_very_next_request(runtime, client, make_user):
    """A check-in with new declarations moves the view's generation: the next admission reads the workers again."""
    _, owner = make_user("owner")
    text_pop(client, owner, max_context_length=4096)
    user, _ = make_user("client", kudos=100)
    runtime.snapshots = Snapshots(max_age_s=CACHED_S)
    first = _admit(runtime, user).request
    text_pop(client, owner, max_context_length=1024)

    second = _admit(runtime, user).request

    assert first is not None and second is not None
    assert (first.params["max_context_length"], second.params["max_context_length"]) == (4096, 1024)


def test_a_front_refusal_stands_on_a_fresh_read(runtime, client, make_user):
    """With no worker of the model anywhere, the fresh read refuses as the view did."""
    _, owner = make_user("owner")
    text_pop(client, owner)
    user, _ = make_user("client", kudos=100)
    runtime.snapshots = Snapshots(max_age_s=CACHED_S)

    with pytest.raises(errors.ModelNotFound):
        _admit(runtime, user, dict(BODY, models=["nowhere"]))
    with pytest.raises(errors.NoWorkerSupportsLimit):
        _admit(runtime, user, dict(BODY, params={"max_length": 1024}))  # the worker generates up to 512
