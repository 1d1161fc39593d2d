"""Account routes: who am I."""

from flask_restx import Namespace, Resource, fields

from horde.accounts.auth import authenticate
from horde.accounts.models import User
from horde.request_context import api_key, runtime

namespace = Namespace("accounts", description="Users and kudos")

user_model = namespace.model(
    "User", {"id": fields.Integer, "username": fields.String, "kudos": fields.Integer, "trusted": fields.Boolean}
)


@namespace.route("")
class FindUser(Resource):
    @namespace.doc(params={"apikey": {"in": "header", "description": "API key"}})
    @namespace.marshal_with(user_model)
    def get(self) -> dict:
        """The caller's account, with its balance as it is now."""
        hub = runtime()
        identity = authenticate(hub, api_key())
        with hub.db.read() as session:
            return session.get_one(User, identity.id).to_public()
