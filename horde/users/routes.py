"""The AI Horde's user routes: /find_user (the API key's user), /users (a page of every user). /users/{id}, which
moderators also change and delete, is declared on this namespace by horde/moderation/routes.py."""

from __future__ import annotations

from flask import request as http_request
from flask_restx import Namespace, Resource

from horde import errors
from horde.accounts.auth import authenticate
from horde.accounts.models import SharedKey
from horde.http.request_context import api_key, runtime
from horde.http.swagger import body_model
from horde.users import details
from horde.users.schemas import UserDetailsSchema

find_namespace = Namespace("find_user", description="The API key's user")
users_namespace = Namespace("users", description="Users, as the AI Horde lists them")
APIKEY_HEADER = {"apikey": {"in": "header", "description": "API key; 0000000000 or none is anonymous"}}
find_model = body_model(find_namespace, "UserDetails", UserDetailsSchema)
user_model = body_model(users_namespace, "UserDetails", UserDetailsSchema)


@find_namespace.route("")
class FindUser(Resource):
    @find_namespace.doc(params=APIKEY_HEADER)
    @find_namespace.response(200, "The API key's user, in its own view", find_model)
    def get(self) -> dict:
        """The user owning the API key, with its balance as it is now; for a shared key, its owner's public view."""
        hub = runtime()
        identity = authenticate(hub, api_key())
        with hub.db.read() as session:
            if identity.shared_key_id is None:
                return details.find(session, identity.id, own=True)
            key = session.get(SharedKey, identity.shared_key_id)
            if key is None:  # deleted since this process last authenticated it
                raise errors.UserNotFound("No user matching the shared key sent.")
            return details.find(session, identity.id, own=False, shared_key_name=key.name or "")


@users_namespace.route("")
class Users(Resource):
    @users_namespace.doc(
        params={
            "page": {"in": "query", "description": f"From 1; {details.PAGE_SIZE} users a page", "type": "integer"},
            "sort": {"in": "query", "description": "'kudos' (most first, the default) or 'age' (oldest first)"},
        }
    )
    @users_namespace.response(200, "A page of users, in their public view", [user_model])
    def get(self) -> list[dict]:
        """Every user's public details, a page at a time."""
        raw_page = http_request.args.get("page", "1")
        if not (raw_page.isascii() and raw_page.lstrip("-").isdecimal()) or len(raw_page) > 12:
            raise errors.BadRequest("Invalid 'page': a whole number.", param="page")
        sort = http_request.args.get("sort", "kudos")
        with runtime().db.read() as session:
            return details.page(session, int(raw_page), sort if sort in details.SORTS else "kudos")
