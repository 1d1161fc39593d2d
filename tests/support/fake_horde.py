"""A tiny Horde speaking the native worker protocol on a real port, for the bridge's tests.

It hands out queued jobs on pop (long-polling like the real one) and on a submit that
carries `pop` (or refuses that field, as a Horde from before it), records every
progress, submit and fault, answers cancel for chosen jobs, and can be told to fail
pops or submits, so the worker's loop runs over real HTTP without the real server.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time

from flask import Flask, jsonify, request
from werkzeug.serving import make_server

WORKER_KEY = "worker-key-123"


class FakeHorde:
    def __init__(self):
        self.jobs: queue.Queue = queue.Queue()
        self.pops: list[dict] = []
        self.progress: list[dict] = []
        self.submits: list[dict] = []
        self.submit_attempts: list[dict] = []
        self.faults: list[dict] = []
        self.cancel_ids: set[str] = set()
        self.pop_errors: list[tuple[int, dict]] = []
        self.submit_errors: dict[str, list[tuple[int, dict]]] = {}
        self.active: set[str] = set()
        self.refuse_submit_pop = False
        self.handed_by_submit: list[str] = []
        self.max_active = 0
        self._ids = itertools.count(1)
        self._changed = threading.Condition()
        self.app = self._build_app()
        self._server = None
        self.url = ""

    # -- test controls ---------------------------------------------------------------

    def add_job(self, payload: dict, model: str = "test/model", ttl: int = 150) -> str:
        job_id = f"job-{next(self._ids)}"
        self.jobs.put({"id": job_id, "model": model, "ttl": ttl, "payload": payload})
        return job_id

    def start(self) -> FakeHorde:
        self._server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()

    def wait_for(self, predicate, timeout_s: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.1))
        return True

    def settled(self, job_id: str) -> bool:
        return any(b["id"] == job_id for b in self.submits + self.faults)

    # -- the protocol ----------------------------------------------------------------

    def _record(self, bucket: list, body: dict, finished: bool = False) -> None:
        with self._changed:
            bucket.append(body)
            if finished:
                self.active.discard(body.get("id"))
            self._changed.notify_all()

    def _hand_out(self, wait_s: float) -> dict | None:
        try:
            job = self.jobs.get(timeout=min(wait_s, 5.0) or 0.01)
        except queue.Empty:
            return None
        with self._changed:
            self.active.add(job["id"])
            self.max_active = max(self.max_active, len(self.active))
            self._changed.notify_all()
        return job

    def _build_app(self) -> Flask:
        app = Flask("fake_horde")

        @app.before_request
        def check_key():
            if request.headers.get("apikey") != WORKER_KEY:
                return jsonify(message="Invalid API key", rc="InvalidAPIKey"), 401
            return None

        @app.post("/api/v2/generate/chat/pop")
        def pop():
            body = request.get_json()
            self._record(self.pops, body)
            if self.pop_errors:
                status, error = self.pop_errors.pop(0)
                return jsonify(error), status
            job = self._hand_out(float(body.get("wait") or 0))
            return jsonify(job or {"id": None, "skipped": {"models": 1}})

        @app.post("/api/v2/generate/chat/progress")
        def progress():
            body = request.get_json()
            self._record(self.progress, body)
            return jsonify(cancel=body["id"] in self.cancel_ids)

        @app.post("/api/v2/generate/chat/submit")
        def submit():
            body = request.get_json()
            self._record(self.submit_attempts, body)
            errors = self.submit_errors.get(body["id"])
            if errors:
                status, error = errors.pop(0)
                return jsonify(error), status
            if "pop" in body and self.refuse_submit_pop:
                return jsonify(message="Invalid 'pop': Unknown field.", rc="BadRequest", param="pop"), 400
            self._record(self.submits, body, finished=True)
            if "pop" not in body:
                return jsonify(reward=10)
            job = self._hand_out(float(body["pop"].get("wait") or 0))
            if job is not None:
                self.handed_by_submit.append(job["id"])
            return jsonify(reward=10, next=job or {"id": None, "skipped": {}})

        @app.post("/api/v2/generate/chat/fault")
        def fault():
            self._record(self.faults, request.get_json(), finished=True)
            return jsonify({})

        return app
