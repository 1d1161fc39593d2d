"""The text API's fields, defaults, limits, refusals and settlement, on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt

from tests.support.text_api import find_user, text_async, text_pop, text_queued, text_status, text_submit


def test_defaults_reach_the_worker_and_samplers_pass_unchanged(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner)
    samplers = {
        "top_k": 40,
        "rep_pen": 1.1,
        "rep_pen_range": 320,
        "sampler_order": [6, 0, 1],
        "min_p": 0.05,
        "singleline": True,
        "stop_sequence": ["\nYou:"],
    }
    text_queued(client, key, params=samplers)
    job = text_pop(client, owner)
    assert job["payload"] == {**samplers, "n": 1, "max_length": 80, "max_context_length": 1024, "prompt": "Once"}
    assert job["model"] == "m1" and job["ttl"] > 0 and job["ids"] == [job["id"]]


def test_unknown_fields_are_ignored_with_a_warning(client, make_user):
    _, key = make_user(kudos=10)
    answer = text_async(client, key, sampler_seed=3, params={"dry_multiplier": 0.8})
    assert answer.status_code == 202
    warned = {warning["message"].split("'")[1] for warning in answer.json["warnings"]}
    assert warned == {"sampler_seed", "params.dry_multiplier"}
    assert "No text worker serving m1 is online" in answer.json["message"]


def test_limits_are_the_ai_hordes(client, make_user):
    _, key = make_user()
    for params, param in (
        ({"n": 21}, "params.n"),
        ({"max_length": 1025}, "params.max_length"),
        ({"max_length": 15}, "params.max_length"),
        ({"max_context_length": 79}, "params.max_context_length"),
        ({"temperature": 5.1}, "params.temperature"),
        ({"top_k": 101}, "params.top_k"),
    ):
        answer = text_async(client, key, params=params)
        assert (answer.status_code, answer.json["rc"], answer.json["param"]) == (400, "BadRequest", param)
    assert text_async(client, key, workers=["a", "b", "c", "d", "e", "f"]).json["param"] == "workers"
    assert text_async(client, key, extra_source_images=[{"image": "x"}]).json["param"] == "extra_source_images"
    styled = text_async(client, key, style="noir")
    assert (styled.status_code, styled.json["rc"]) == (404, "StyleNotFound")


def test_dry_run_prices_and_queues_nothing(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner)
    answer = text_async(client, key, dry_run=True, params={"n": 3, "max_length": 200})
    assert answer.status_code == 200 and set(answer.json) == {"kudos"}
    one = text_async(client, key, dry_run=True, params={"n": 1, "max_length": 200}).json["kudos"]
    assert answer.json["kudos"] == 3 * one > 0
    assert text_pop(client, owner)["id"] is None


def test_charge_and_reward_once_per_generation(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner)
    request_id = text_queued(client, key, params={"n": 2, "max_length": 100})
    first, second = text_pop(client, owner, amount=1), text_pop(client, owner, amount=1)
    assert text_status(client, request_id)["processing"] == 2
    reward = text_submit(client, owner, first["id"], "x" * 200).json["reward"]
    duplicate = text_submit(client, owner, first["id"], "x" * 200)
    assert (duplicate.status_code, duplicate.json["rc"]) == (400, "DuplicateGen")
    text_submit(client, owner, second["id"], "y" * 40)
    status = text_status(client, request_id)
    assert status["done"] and status["finished"] == 2 and status["kudos"] >= reward > 0
    assert find_user(client, key)["kudos"] == 100 - status["kudos"]
    assert find_user(client, owner)["kudos"] == status["kudos"]


def test_submit_refusals(client, make_user):
    _, owner = make_user()
    _, other = make_user()
    _, key = make_user(kudos=10)
    text_pop(client, owner)
    text_queued(client, key)
    job = text_pop(client, owner)
    unknown = text_submit(client, owner, "00000000-0000-0000-0000-000000000000")
    assert (unknown.status_code, unknown.json["rc"]) == (404, "InvalidJobID")
    foreign = text_submit(client, other, job["id"])
    assert (foreign.status_code, foreign.json["rc"]) == (403, "WrongCredentials")
    anonymous = client.post("/api/v2/generate/text/submit", json={"id": job["id"], "generation": "x"})
    assert anonymous.json["rc"] == "AnonForbiddenWorker"


def test_a_faulted_generation_waits_again_then_the_request_faults(client, make_user, runtime):
    _, owner = make_user()
    _, key = make_user(kudos=10)
    text_pop(client, owner)
    request_id = text_queued(client, key)
    for attempt in range(runtime.settings.max_attempts):
        job = text_pop(client, owner)
        assert job["id"], f"attempt {attempt}"
        assert text_submit(client, owner, job["id"], "", state="faulted").json == {"reward": 0}
    status = text_status(client, request_id)
    assert status["faulted"] and status["restarted"] == runtime.settings.max_attempts and not status["done"]
    assert find_user(client, key)["kudos"] == 10


def test_an_expired_job_restarts(client, make_user, runtime):
    from horde.text import service
    from horde.text.models import TextJob

    _, owner = make_user()
    _, key = make_user(kudos=10)
    text_pop(client, owner)
    request_id = text_queued(client, key)
    job = text_pop(client, owner)
    with runtime.db.transaction() as session:
        session.get(TextJob, job["id"]).deadline_at -= dt.timedelta(seconds=runtime.settings.job_ttl_s + 1)
    assert service.sweep(runtime) == 1
    status = text_status(client, request_id)
    assert (status["waiting"], status["processing"], status["restarted"]) == (1, 0, 1)
    late = text_submit(client, owner, job["id"])
    assert (late.status_code, late.json["rc"]) == (400, "AbortedGen")
    assert text_pop(client, owner)["id"] not in (None, job["id"])


def test_cancel_stops_new_generations_and_keeps_running_ones(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner)
    request_id = text_queued(client, key, params={"n": 3})
    running = text_pop(client, owner)
    cancelled = client.delete(f"/api/v2/generate/text/status/{request_id}").json
    assert (cancelled["waiting"], cancelled["processing"], cancelled["done"]) == (2, 1, False)  # as before the cancel
    after = text_status(client, request_id)
    assert (after["waiting"], after["processing"], after["done"]) == (0, 1, False)
    assert text_pop(client, owner)["id"] is None
    assert text_submit(client, owner, running["id"]).json["reward"] > 0
    final = text_status(client, request_id)
    assert final["done"] and final["finished"] == 1 and len(final["generations"]) == 1


def test_worker_restrictions_route_and_skipped_counts_explain(client, make_user):
    _, owner = make_user()
    _, trusted_owner = make_user(trusted=True)
    _, key = make_user(kudos=100)
    plain = text_pop(client, owner, "plain")
    assert plain["id"] is None
    workers = client.get("/api/v2/workers?type=text").json
    plain_id = next(worker["id"] for worker in workers if worker["name"] == "plain")
    text_pop(client, trusted_owner, "trusted")
    text_queued(client, key, trusted_workers=True)
    text_queued(client, key, workers=[plain_id], worker_blacklist=True)
    text_queued(client, key, softprompt="alice")
    text_queued(client, key, nsfw=True)
    text_queued(client, key, models=["m2"])
    text_queued(client, key, params={"max_length": 600})
    skipped = text_pop(client, owner, "plain")
    assert skipped["id"] is None
    assert skipped["skipped"] == {
        "untrusted": 1,
        "worker_id": 1,
        "matching_softprompt": 1,
        "nsfw": 1,
        "models": 1,
        "max_length": 1,
    }
    taken = text_pop(client, trusted_owner, "trusted", softprompts=["alice"], nsfw=True, amount=5)
    assert taken["id"] is not None


def test_priority_usernames_are_served_first(client, make_user):
    _, owner = make_user()
    favourite, favourite_key = make_user(kudos=1)
    _, rich_key = make_user(kudos=1000)
    text_pop(client, owner)
    text_queued(client, rich_key, prompt="rich")
    text_queued(client, favourite_key, prompt="favourite")
    job = text_pop(client, owner, priority_usernames=[f"{favourite.username}#{favourite.id}"])
    assert job["payload"]["prompt"] == "favourite"
    assert text_pop(client, owner)["payload"]["prompt"] == "rich"


def test_amount_is_capped_by_free_threads(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner, threads=3)
    request_id = text_queued(client, key, params={"n": 5})
    first = text_pop(client, owner, threads=3, amount=5)
    assert len(first["ids"]) == 3 and first["payload"]["n"] == 3
    assert text_pop(client, owner, threads=3, amount=5)["id"] is None  # no free thread left
    text_submit(client, owner, first["ids"][0])
    assert len(text_pop(client, owner, threads=3, amount=5)["ids"]) == 1
    assert text_status(client, request_id)["finished"] == 1


def test_disable_batching_hands_out_one_generation_per_pop(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner, threads=4)
    text_queued(client, key, disable_batching=True, params={"n": 3})
    assert len(text_pop(client, owner, threads=4, amount=3)["ids"]) == 1


def test_kudos_upfront_and_allow_downgrade(client, make_user):
    _, owner = make_user()
    _, poor = make_user(kudos=0)
    text_pop(client, owner, threads=1, max_length=1024)
    big = {"n": 20, "max_length": 1024}
    refused = text_async(client, poor, params=big)
    assert (refused.status_code, refused.json["rc"]) == (403, "KudosUpfront")
    downgraded = text_async(client, poor, params=big, allow_downgrade=True)
    assert downgraded.status_code == 202 and downgraded.json["warnings"][0]["code"] == "Downgraded"
    assert text_pop(client, owner)["payload"]["max_length"] < 1024


def test_registry_and_stats_answers(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner, "reader", models=["m1", "m2"])
    text_queued(client, key)
    job = text_pop(client, owner, "reader", models=["m1", "m2"])
    text_submit(client, owner, job["id"], "z" * 40)
    worker = client.get("/api/v2/workers?type=text").json[0]
    assert worker["type"] == "text" and worker["models"] == ["m1", "m2"] and worker["requests_fulfilled"] == 1
    assert client.get(f"/api/v2/workers/{worker['id']}").json["name"] == "reader"
    assert client.get("/api/v2/workers/nope").json["rc"] == "WorkerNotFound"
    assert client.get("/api/v2/workers?type=chat").json == []
    models = client.get("/api/v2/status/models?type=text").json
    assert [(m["name"], m["count"], m["type"]) for m in models] == [("m1", 1, "text"), ("m2", 1, "text")]
    assert client.get("/api/v2/status/models/m1").json[0]["type"] == "text"
    assert client.get("/api/v2/status/models?type=chat").json == []
    totals = client.get("/api/v2/stats/text/totals").json
    assert totals["minute"] == totals["total"] == {"requests": 1, "tokens": 10}
    assert client.get("/api/v2/stats/text/models").json["total"] == {"m1": 1}
    assert client.get("/api/v2/status/heartbeat").json["message"] == "OK"


def test_webhook_must_be_public(client, make_user):
    _, key = make_user(kudos=10)
    refused = text_async(client, key, webhook="http://10.1.2.3/hook")
    assert (refused.status_code, refused.json["param"]) == (400, "webhook")
    assert "non-public" in refused.json["message"]
    assert text_async(client, key, webhook="ftp://example.com/hook").json["param"] == "webhook"


def test_webhook_is_posted_after_each_generation(client, make_user):
    import http.server
    import json
    import threading

    from tests.support.processes import wait_until

    received = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _, owner = make_user()
        _, key = make_user(kudos=100)
        text_pop(client, owner)
        request_id = text_queued(client, key, webhook=f"http://127.0.0.1:{server.server_port}/hook", params={"n": 2})
        for job_id in text_pop(client, owner, amount=2)["ids"]:
            text_submit(client, owner, job_id, f"text of {job_id}")
        wait_until(lambda: len(received) == 2, what="two webhook posts")
        assert {post["request"] for post in received} == {request_id}
        assert sorted(post["text"] for post in received) == sorted(f"text of {post['id']}" for post in received)
    finally:
        server.shutdown()


def test_a_long_poll_pop_gets_a_job_queued_while_it_waits(client, make_user):
    import threading

    _, owner = make_user()
    _, key = make_user(kudos=10)
    text_pop(client, owner)
    answers = []
    popper = threading.Thread(target=lambda: answers.append(text_pop(client.application.test_client(), owner, wait=20)))
    popper.start()
    request_id = text_queued(client, key)
    popper.join(60)
    assert answers[0]["id"] is not None and text_status(client, request_id)["processing"] == 1


def test_chat_and_text_share_one_rate_limit(client, make_user, runtime):
    from tests.support.native import pop, queue

    runtime.settings = runtime.settings.replace(rate_limit_per_minute=2)
    _, owner = make_user()
    _, key = make_user(kudos=100)
    pop(client, owner)
    assert queue(client, key).status_code == 202
    assert text_async(client, key).status_code == 202
    limited = text_async(client, key)
    assert (limited.status_code, limited.json["rc"]) == (429, "rate_limit_exceeded")
    assert limited.headers["Retry-After"] == "60"
