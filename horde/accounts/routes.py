"""Account routes: who am I."""

from flask_restx import Namespace, Resource

from horde.accounts.auth import authenticate
from horde.accounts.models import User
from horde.accounts.schemas import UserSchema
from horde.request_context import api_key, runtime
from horde.swagger import body_model

namespace = Namespace("accounts", description="Users and kudos")

user_model = body_model(namespace, "User", UserSchema)


@namespace.route("")
class FindUser(Resource):
    @namespace.doc(params={"apikey": {"in": "header", "description": "API key"}})
    @namespace.response(200, "The account", user_model)
    def get(self) -> dict:
        """The caller's account, with its balance as it is now."""
        hub = runtime()
        identity = authenticate(hub, api_key())
        with hub.db.read() as session:
            return session.get_one(User, identity.id).to_public()
