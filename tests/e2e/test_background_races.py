"""Background responses' races run for real: two server processes on one PostgreSQL database, calls fired at once.

Each round: a background response (its progress kept on odd rounds, as a background stream's is) whose worker has
posted part of its reply; then, behind one barrier, the worker's submit of the whole reply on one server, a cancel
on each server and one more progress post. The request ends once: done and charged for its reply (both cancels
answer the completed response), or cancelled and charged for the text generated before the cancel (both cancels
answer the same cancelled response, which shows that text), never both; every balance equals its ledger.
"""

from __future__ import annotations

import collections
import functools
import uuid

import requests
from sqlalchemy import func, select

from horde.accounts.models import KudosEntry
from horde.background.models import ProgressEntry
from horde.chat import pricing
from horde.chat.models import ChatRequest
from tests.support.harness import postgres_servers
from tests.support.ledger import assert_balances_match_ledger
from tests.support.native import declaration
from tests.support.races import fire_together

ROUNDS = 16
HTTP_TIMEOUT_S = 30
#: Priced at 72B: the charge of the partial text and of the whole reply differ by many kudos.
MODEL = "aphrodite/Qwen/Qwen2.5-72B-Instruct"
PARTIAL = "y" * 400
REPLY = {"content": PARTIAL + "z" * 3600, "usage": {"completion_tokens": 1000}}


def call(server, method: str, path: str, key: str, body: dict | None = None, header: str = "apikey"):
    value = f"Bearer {key}" if header == "Authorization" else key
    return requests.request(method, server.url + path, json=body, headers={header: value}, timeout=HTTP_TIMEOUT_S)


def test_cancels_a_submit_and_a_progress_at_once_end_the_request_once():
    with postgres_servers() as horde:
        first, second = horde.servers
        owner, requester = horde.user(trusted=True), horde.user(kudos=100_000)
        worker = declaration(f"race-{uuid.uuid4().hex[:8]}", models=[MODEL], threads=50, max_length=2048)
        assert call(first, "POST", "/api/v2/generate/chat/pop", owner, worker).status_code == 200
        tally = collections.Counter()
        for round_number in range(ROUNDS):
            body = {"model": MODEL, "input": "Hello", "background": True, "max_output_tokens": 2000}
            if round_number % 2:
                body["stream"] = True
            created = requests.post(
                first.url + "/v1/responses",
                json=body,
                headers={"Authorization": f"Bearer {requester}"},
                stream=True,
                timeout=HTTP_TIMEOUT_S,
            )
            assert created.status_code == 200, created.text
            request_id = created.headers["x-request-id"]
            created.close()  # a background stream's client may go: nothing is cancelled
            response_id = "resp_" + request_id.replace("-", "")
            popped = call(second, "POST", "/api/v2/generate/chat/pop", owner, dict(worker, wait=5)).json()
            job = popped["id"]
            assert job is not None, (round_number, popped)
            progress = {"id": job, "content": PARTIAL}
            assert call(first, "POST", "/api/v2/generate/chat/progress", owner, progress).json() == {"cancel": False}
            cancel = f"/v1/responses/{response_id}/cancel"
            submitted, cancelled_here, cancelled_there, _ = fire_together(
                [
                    functools.partial(
                        call, second, "POST", "/api/v2/generate/chat/submit", owner, {"id": job, **REPLY}
                    ),
                    functools.partial(call, first, "POST", cancel, requester, header="Authorization"),
                    functools.partial(call, second, "POST", cancel, requester, header="Authorization"),
                    functools.partial(
                        call,
                        first,
                        "POST",
                        "/api/v2/generate/chat/progress",
                        owner,
                        {"id": job, "content": PARTIAL + "z"},
                    ),
                ]
            )
            assert cancelled_here.status_code == cancelled_there.status_code == 200, cancelled_here.text
            answered = cancelled_here.json()
            assert cancelled_there.json() == answered
            with horde.runtime.db.read() as session:
                row = session.get_one(ChatRequest, request_id)
                charged = session.execute(
                    select(KudosEntry.kind, func.sum(KudosEntry.amount), func.count())
                    .where(KudosEntry.request_id == request_id)
                    .group_by(KudosEntry.kind)
                ).all()
                kept = session.scalar(select(func.count()).where(ProgressEntry.request_id == request_id))
            charges = {kind: (amount, count) for kind, amount, count in charged}
            assert charges == {"charge": (-row.kudos_charged, 1), "reward": (row.kudos_charged, 1)}  # once
            assert answered["x_horde"]["kudos"] == row.kudos_charged
            if row.state == "done":
                assert submitted.status_code == 200 and answered["status"] == "completed"
                assert row.kudos_charged == submitted.json()["reward"]
                tally["done, charged for the reply"] += 1
            else:
                assert row.state == "cancelled" and submitted.status_code != 200 and answered["status"] == "cancelled"
                shown = answered["output"][0]["content"][0]["text"]
                assert shown in (PARTIAL, PARTIAL + "z") and shown == row.progress_content
                assert row.kudos_charged == pricing.price(
                    MODEL, completion_tokens=len(shown) // 4, prompt_tokens=row.prompt_tokens
                )
                tally["cancelled, charged for the text generated"] += 1
            assert kept == (0 if round_number % 2 == 0 else (1 if row.progress_content == PARTIAL else 2))
        assert_balances_match_ledger(horde.runtime.db)
        print(f"\n{ROUNDS} rounds of a submit, two cancels and a progress at once: {dict(tally)}")
