"""Registration's routes on /api/v2, JSON always: registering (/register), a user's new key
(/users/{id}/api_key), and the OpenID Connect sign-in session (/oidc/session, /oidc/api_key). Thin: each calls one
service. The AI Horde's HTML form and the sign-in's redirects are page_routes.py's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask import request
from flask_restx import Namespace, Resource

from horde.accounts import rotation
from horde.accounts.auth import authenticate
from horde.accounts.schemas import SimpleAnswerSchema
from horde.authz.check import authorize
from horde.authz.rules import Action
from horde.http.client_address import client_address
from horde.http.payload import load
from horde.http.request_context import api_key, json_body, runtime
from horde.http.swagger import body_model
from horde.registration import oidc, signin
from horde.registration.modes import registration_mode
from horde.registration.schemas import (
    REGISTER_SCHEMA,
    ApiKeySchema,
    RegisteredSchema,
    RegistrationStatusSchema,
    SignInSessionSchema,
)
from horde.registration.service import register

if TYPE_CHECKING:
    from horde.registration.modes import RegistrationParts

register_namespace = Namespace("register", description="Registration: a new account and its API key")
api_key_namespace = Namespace("api_keys", description="A user's new API key (mounted at /users)")
oidc_namespace = Namespace("oidc", description="The web page's sign-in through the OpenID Connect provider")
APIKEY_HEADER = {"apikey": {"in": "header", "description": "The user's own API key", "required": True}}
CSRF_HEADER = {signin.CSRF_HEADER: {"in": "header", "description": "The session's csrf_token", "required": True}}
LOGIN_URL = "/oidc/login"

register_model = body_model(register_namespace, "Register", REGISTER_SCHEMA)
registered_model = body_model(register_namespace, "Registered", RegisteredSchema)
status_model = body_model(register_namespace, "RegistrationStatus", RegistrationStatusSchema)
key_model = body_model(api_key_namespace, "NewApiKey", ApiKeySchema)
session_model = body_model(oidc_namespace, "SignInSession", SignInSessionSchema)
oidc_key_model = body_model(oidc_namespace, "NewApiKey", ApiKeySchema)
signed_out_model = body_model(oidc_namespace, "SimpleResponse", SimpleAnswerSchema)


def registration_status(hub: RegistrationParts) -> dict:
    """What the web page offers: the mode, and the provider's sign-in where it is on."""
    provider = oidc.provider_of(hub.settings)
    return {
        "registration": registration_mode(hub).value,
        "oidc": {
            "enabled": provider is not None,
            "login_url": LOGIN_URL,
            "provider": provider.name if provider else "",
        },
    }


@register_namespace.route("")
class Register(Resource):
    @register_namespace.response(200, "The registration mode and the sign-in", status_model)
    def get(self) -> dict:
        """Whether registration is open, by invitation or closed, and whether the OpenID Connect sign-in is on."""
        return registration_status(runtime())

    @register_namespace.expect(register_model)
    @register_namespace.response(201, "The new account; its API key is shown this once", registered_model)
    def post(self) -> tuple[dict, int]:
        """Make an account: 201 with its id, `name#id` and API key."""
        hub = runtime()
        body = load(REGISTER_SCHEMA, json_body())
        address = client_address(request.environ, hub.settings.trusted_proxy_hops)
        made = register(hub, body["username"], invite_code=body["invite_code"], address=address)
        return made.to_json(), 201


@api_key_namespace.route("/<int:user_id>/api_key")
class ApiKey(Resource):
    @api_key_namespace.doc(params=APIKEY_HEADER)
    @api_key_namespace.response(200, "The new key; the old one is refused from the next request on", key_model)
    def post(self, user_id: int) -> dict:
        """Replace the user's API key: the user themself, with their own key (a shared key cannot)."""
        hub = runtime()
        caller = authenticate(hub, api_key())
        return {"api_key": rotation.rotate(hub, caller, user_id)}


@oidc_namespace.route("/session")
class Session(Resource):
    @oidc_namespace.response(200, "Who the browser is signed in as, or signed_in false", session_model)
    def get(self) -> dict:
        """The sign-in session of the browser's cookie: its account, and the CSRF token of its changes."""
        signed_in = signin.current(runtime(), request.cookies.get(signin.SESSION_COOKIE))
        return signed_in.to_json() if signed_in else {"signed_in": False}

    @oidc_namespace.doc(params=CSRF_HEADER)
    @oidc_namespace.response(200, "Signed out", signed_out_model)
    def delete(self) -> dict:
        """Sign out: the session ends at once."""
        hub, cookie = runtime(), request.cookies.get(signin.SESSION_COOKIE)
        signed_in = signin.required(hub, cookie, request.headers.get(signin.CSRF_HEADER))
        authorize(signed_in, Action.MANAGE_SIGN_IN)
        signin.end(hub, cookie)
        return {"message": "OK"}


@oidc_namespace.route("/api_key")
class SessionApiKey(Resource):
    @oidc_namespace.doc(params=CSRF_HEADER)
    @oidc_namespace.response(200, "The new key; the old one is refused from the next request on", oidc_key_model)
    def post(self) -> dict:
        """A new API key for the signed-in account (its first after the sign-in that made it), shown this once."""
        hub = runtime()
        signed_in = signin.required(
            hub, request.cookies.get(signin.SESSION_COOKIE), request.headers.get(signin.CSRF_HEADER)
        )
        authorize(signed_in, Action.MANAGE_SIGN_IN)
        return {"api_key": signin.new_key(hub, signed_in)}
