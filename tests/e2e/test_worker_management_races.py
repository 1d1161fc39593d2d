"""Races on PUT and DELETE /workers/{id}, on PostgreSQL with two server processes: one rename to a name wins, no pop
that begins after a PUT of maintenance answered gets a job, and a job ended by its worker's deletion is never also
rewarded."""

from __future__ import annotations

import threading
import uuid

import requests
from sqlalchemy import select

from horde.text.models import TextJob
from tests.support.harness import postgres_servers, unique_model
from tests.support.races import fire_together

ROUNDS = 30
RENAMERS = 4
POPPERS = 6
POPS_AFTER_THE_PUT = 2
TIMEOUT_S = 30


def call(method: str, url: str, path: str, key: str | None = None, body: dict | None = None) -> requests.Response:
    headers = {"apikey": key} if key else {}
    return requests.request(method, url + "/api/v2" + path, json=body, headers=headers, timeout=TIMEOUT_S)


def text_pop_body(name: str, model: str) -> dict:
    return {"name": name, "models": [model], "max_length": 512, "max_context_length": 4096, "threads": 8}


def worker_id(url: str, name: str) -> str:
    return call("GET", url, f"/workers/name/{name}").json()["id"]


def test_renames_to_one_name_at_once_one_wins_the_others_are_refused():
    with postgres_servers() as horde:
        owners = [horde.user() for _ in range(RENAMERS)]
        for round_ in range(ROUNDS):
            names = [f"renamer-{uuid.uuid4().hex[:8]}" for _ in range(RENAMERS)]
            ids = []
            for index, name in enumerate(names):
                call(
                    "POST", horde.servers[index % 2].url, "/generate/text/pop", owners[index], text_pop_body(name, "m1")
                )
                ids.append(worker_id(horde.url, name))
            target = f"wanted-{uuid.uuid4().hex[:8]}"
            answers = fire_together(
                [
                    lambda index=index, ids=ids, target=target: call(
                        "PUT", horde.servers[index % 2].url, f"/workers/{ids[index]}", owners[index], {"name": target}
                    )
                    for index in range(RENAMERS)
                ]
            )
            outcomes = sorted((answer.status_code, answer.json().get("rc")) for answer in answers)
            assert outcomes == [(200, None)] + [(400, "WorkerNameAlreadyExists")] * (RENAMERS - 1), round_
            winner = ids[[answer.status_code for answer in answers].index(200)]
            assert worker_id(horde.servers[1].url, target) == winner


def test_every_pop_that_begins_after_a_put_of_maintenance_answered_gets_no_job():
    """A pop in flight when the PUT commits may still take a job (the worker finishes what it holds, as on the AI
    Horde); every pop that begins once the PUT answered is refused, and no job is handed out that no pop got."""
    with postgres_servers() as horde:
        model, owner, client_key = unique_model("maintenance"), horde.user(), horde.user(kudos=100_000)
        name = f"flipper-{uuid.uuid4().hex[:8]}"
        call("POST", horde.url, "/generate/text/pop", owner, text_pop_body(name, model))
        worker = worker_id(horde.url, name)
        for round_ in range(ROUNDS):
            body = {"prompt": "go", "models": [model], "params": {"n": 8}}
            request_id = call("POST", horde.url, "/generate/text/async", client_key, body).json()["id"]
            answered = threading.Event()

            def put_maintenance(answered=answered) -> requests.Response:
                answer = call("PUT", horde.servers[1].url, f"/workers/{worker}", owner, {"maintenance": True})
                answered.set()
                return answer

            def popper(index: int, answered=answered) -> list[tuple[bool, int, list]]:
                """Pop until POPS_AFTER_THE_PUT pops began after the PUT answered: (began after it, status, ids)."""
                seen: list[tuple[bool, int, list]] = []
                while sum(after for after, _, _ in seen) < POPS_AFTER_THE_PUT:
                    after = answered.is_set()
                    answer = call(
                        "POST", horde.servers[index % 2].url, "/generate/text/pop", owner, text_pop_body(name, model)
                    )
                    seen.append((after, answer.status_code, answer.json().get("ids") or []))
                return seen

            results = fire_together([put_maintenance] + [lambda index=index: popper(index) for index in range(POPPERS)])
            assert results[0].status_code == 200 and results[0].json() == {"maintenance": True}, round_
            pops = [pop for seen in results[1:] for pop in seen]
            assert {status for after, status, _ in pops if after} == {403}, round_
            handed_out = sorted(job_id for _, _, ids in pops for job_id in ids)
            with horde.runtime.db.read() as session:
                claimed = session.scalars(
                    select(TextJob.id).where(TextJob.worker_id == worker, TextJob.request_id == request_id)
                ).all()
            assert sorted(claimed) == handed_out, round_
            assert call("PUT", horde.url, f"/workers/{worker}", owner, {"maintenance": False}).status_code == 200
            call("DELETE", horde.url, f"/generate/text/status/{request_id}")
            for job_id in handed_out:  # the jobs it holds end, so its threads are free for the next round
                call("POST", horde.url, "/generate/text/submit", owner, {"id": job_id, "generation": "done"})


def test_a_job_ended_by_its_workers_deletion_is_never_also_rewarded():
    with postgres_servers() as horde:
        model, client_key = unique_model("deletion"), horde.user(kudos=100_000)
        for round_ in range(ROUNDS):
            _delete_while_submitting(horde, model, client_key, round_)


def _delete_while_submitting(horde, model: str, client_key: str, round_: int) -> None:
    """One round: the owner deletes its worker while the worker submits its running job and a PUT changes it."""
    owner, name = horde.user(), f"doomed-{uuid.uuid4().hex[:8]}"
    call("POST", horde.servers[0].url, "/generate/text/pop", owner, text_pop_body(name, model))
    worker = worker_id(horde.url, name)
    request_id = call(
        "POST", horde.url, "/generate/text/async", client_key, {"prompt": "go", "models": [model]}
    ).json()["id"]
    job_id = call("POST", horde.servers[0].url, "/generate/text/pop", owner, text_pop_body(name, model)).json()["id"]
    assert job_id is not None, round_
    deleted, submitted, modified = fire_together(
        [
            lambda: call("DELETE", horde.servers[0].url, f"/workers/{worker}", owner),
            lambda: call(
                "POST", horde.servers[1].url, "/generate/text/submit", owner, {"id": job_id, "generation": "x" * 40}
            ),
            lambda: call("PUT", horde.servers[1].url, f"/workers/{worker}", owner, {"info": "racing"}),
        ]
    )
    assert deleted.status_code == 200, (round_, deleted.text)
    assert (modified.status_code, modified.json().get("rc")) in ((200, None), (404, "WorkerNotFound")), round_
    status = call("GET", horde.url, f"/generate/text/status/{request_id}").json()
    balance = call("GET", horde.url, "/find_user", owner).json()["kudos"]
    if submitted.status_code == 200:  # the submit won: its generation stands, rewarded once
        assert (status["finished"], status["restarted"]) == (1, 0), round_
        assert balance == submitted.json()["reward"] > 0, round_
    else:  # the deletion won: the job restarted, no reward
        assert (submitted.status_code, submitted.json()["rc"]) == (400, "AbortedGen"), round_
        assert (status["finished"], status["restarted"], status["waiting"]) == (0, 1, 1), round_
        assert balance == 0, round_
    call("DELETE", horde.url, f"/generate/text/status/{request_id}")
