"""The worker protocol's chat routes: pop, progress, submit, fault. Thin: each calls one service.

They live in the dispatch layer with the chat pop they call (horde/dispatch/pop.py), above chat and text: a
pop counts the worker's chat and text jobs against its threads. The text ones live in horde/text/routes.py.
"""

from flask_restx import Namespace, Resource

from horde.background import progress_log
from horde.chat import lifecycle
from horde.dispatch import pop as pop_service
from horde.dispatch import worker_calls
from horde.events.bus import progress_channel, request_channel
from horde.http.payload import load
from horde.http.request_context import api_key, json_body, raw_body, runtime
from horde.http.swagger import body_model
from horde.observability.metrics import long_poll
from horde.workers.schemas import (
    FAULT_SCHEMA,
    POP_SCHEMA,
    PROGRESS_SCHEMA,
    SUBMIT_SCHEMA,
    FaultAnswerSchema,
    PopAnswerSchema,
    ProgressAnswerSchema,
    SubmitAnswerSchema,
)

namespace = Namespace("workers", description="The worker protocol")
APIKEY_HEADER = {"apikey": {"in": "header", "description": "The worker owner's API key", "required": True}}
pop_model = body_model(namespace, "ChatPop", POP_SCHEMA)
pop_answer_model = body_model(namespace, "ChatPopAnswer", PopAnswerSchema)
progress_model = body_model(namespace, "ChatProgress", PROGRESS_SCHEMA)
progress_answer_model = body_model(namespace, "ChatProgressAnswer", ProgressAnswerSchema)
submit_model = body_model(namespace, "ChatSubmit", SUBMIT_SCHEMA)
submit_answer_model = body_model(namespace, "ChatSubmitAnswer", SubmitAnswerSchema)
fault_model = body_model(namespace, "ChatFault", FAULT_SCHEMA)
fault_answer_model = body_model(namespace, "ChatFaultAnswer", FaultAnswerSchema)


@namespace.route("/pop")
class Pop(Resource):
    @namespace.doc(params=APIKEY_HEADER)
    @namespace.expect(pop_model)
    @namespace.response(200, "A job, or none and why", pop_answer_model)
    def post(self) -> dict:
        """Check in and take the best eligible job, long-polling up to `wait` seconds."""
        body = raw_body()
        with long_poll():
            return pop_service.pop(runtime(), api_key(), body)


@namespace.route("/progress")
class Progress(Resource):
    @namespace.doc(params=APIKEY_HEADER)
    @namespace.expect(progress_model)
    @namespace.response(200, "Whether to stop", progress_answer_model)
    def post(self) -> dict:
        """Post the whole text generated so far; the answer says whether to stop."""
        body = load(PROGRESS_SCHEMA, json_body())
        hub = runtime()
        owner = pop_service.worker_owner(hub, api_key())
        keeper = progress_log.Keeper(hub.settings)  # runs only for a request whose progress is kept
        with hub.db.transaction() as session:
            stop, request_id = lifecycle.progress(session, owner, body, keep=keeper)
        if keeper.ended:
            hub.bus.publish(request_channel(request_id))
        elif not stop:
            hub.bus.publish(progress_channel(request_id))
        return {"cancel": stop}


@namespace.route("/submit")
class Submit(Resource):
    @namespace.doc(params=APIKEY_HEADER)
    @namespace.expect(submit_model)
    @namespace.response(200, "Accepted, with the next job when `pop` was sent", submit_answer_model)
    def post(self) -> dict:
        """Submit the reply; a reply that breaks the request's contract is refused. With `pop`, also pop."""
        body = load(SUBMIT_SCHEMA, json_body())
        hub = runtime()
        return worker_calls.submit(hub, pop_service.worker_owner(hub, api_key()), body)


@namespace.route("/fault")
class Fault(Resource):
    @namespace.doc(params=APIKEY_HEADER)
    @namespace.expect(fault_model)
    @namespace.response(200, "Noted, with the next job when `pop` was sent", fault_answer_model)
    def post(self) -> dict:
        """Report that the job cannot be done; it restarts elsewhere while attempts remain. With `pop`, also pop."""
        body = load(FAULT_SCHEMA, json_body())
        hub = runtime()
        return worker_calls.fault(hub, pop_service.worker_owner(hub, api_key()), body)
