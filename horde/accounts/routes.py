"""The accounts' routes: kudos transfers (/kudos) and shared keys (/sharedkeys). Thin: each calls one service.

A user's own details (/find_user, /users) are assembled above the workers (horde/users/routes.py)."""

from __future__ import annotations

from flask_restx import Namespace, Resource

from horde.accounts import shared_keys, transfers
from horde.accounts.auth import authenticate
from horde.accounts.schemas import (
    SHARED_KEY_INPUT_SCHEMA,
    TRANSFER_SCHEMA,
    SharedKeyDetailsSchema,
    SimpleAnswerSchema,
    TransferAnswerSchema,
)
from horde.http.payload import load
from horde.http.request_context import api_key, json_body, runtime
from horde.http.swagger import body_model

kudos_namespace = Namespace("kudos", description="Kudos transfers between users")
shared_keys_namespace = Namespace("sharedkeys", description="Shared keys: lend kudos within limits")
APIKEY_HEADER = {"apikey": {"in": "header", "description": "The user's own API key", "required": True}}

transfer_model = body_model(kudos_namespace, "KudosTransfer", TRANSFER_SCHEMA)
transferred_model = body_model(kudos_namespace, "KudosTransferred", TransferAnswerSchema)
key_input_model = body_model(shared_keys_namespace, "SharedKeyInput", SHARED_KEY_INPUT_SCHEMA)
key_details_model = body_model(shared_keys_namespace, "SharedKeyDetails", SharedKeyDetailsSchema)
simple_answer_model = body_model(shared_keys_namespace, "SimpleResponse", SimpleAnswerSchema)


@kudos_namespace.route("/transfer")
class Transfer(Resource):
    @kudos_namespace.doc(params=APIKEY_HEADER)
    @kudos_namespace.expect(transfer_model)
    @kudos_namespace.response(200, "Kudos transferred", transferred_model)
    def post(self) -> dict:
        """Send kudos to another user (`name#id`) or to another user's shared key."""
        hub = runtime()
        sender = authenticate(hub, api_key())
        body = load(TRANSFER_SCHEMA, json_body())
        with hub.db.transaction() as session:
            sent = transfers.send(session, sender, body["username"], body["amount"])
        return {"transferred": float(sent)}


@shared_keys_namespace.route("")
class SharedKeys(Resource):
    @shared_keys_namespace.doc(params=APIKEY_HEADER)
    @shared_keys_namespace.expect(key_input_model)
    @shared_keys_namespace.response(200, "The new key", key_details_model)
    def post(self) -> dict:
        """Create a shared key of the API key's user."""
        return _create()

    @shared_keys_namespace.doc(params=APIKEY_HEADER)
    @shared_keys_namespace.expect(key_input_model)
    @shared_keys_namespace.response(200, "The new key", key_details_model)
    def put(self) -> dict:
        """Create a shared key (the AI Horde's method for it)."""
        return _create()


def _create() -> dict:
    hub = runtime()
    owner = authenticate(hub, api_key())
    fields = load(SHARED_KEY_INPUT_SCHEMA, json_body() or {})
    with hub.db.transaction() as session:
        return shared_keys.create(session, owner, fields)


@shared_keys_namespace.route("/<string:sharedkey_id>")
class SharedKey(Resource):
    @shared_keys_namespace.response(200, "The key", key_details_model)
    def get(self, sharedkey_id: str) -> dict:
        """A shared key's details: anyone holding its id may read them (the id is the key)."""
        with runtime().db.read() as session:
            return shared_keys.read(session, sharedkey_id)

    @shared_keys_namespace.doc(params=APIKEY_HEADER)
    @shared_keys_namespace.expect(key_input_model)
    @shared_keys_namespace.response(200, "The key, changed", key_details_model)
    def patch(self, sharedkey_id: str) -> dict:
        """Change a shared key of the API key's user."""
        hub = runtime()
        owner = authenticate(hub, api_key())
        fields = load(SHARED_KEY_INPUT_SCHEMA, json_body() or {})
        with hub.db.transaction() as session:
            return shared_keys.update(session, owner, sharedkey_id, fields)

    @shared_keys_namespace.doc(params=APIKEY_HEADER)
    @shared_keys_namespace.response(200, "Deleted", simple_answer_model)
    def delete(self, sharedkey_id: str) -> dict:
        """Delete a shared key of the API key's user."""
        hub = runtime()
        owner = authenticate(hub, api_key())
        with hub.db.transaction() as session:
            shared_keys.delete(session, owner, sharedkey_id)
        return {"message": "OK"}
