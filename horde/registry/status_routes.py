"""The AI Horde's status and meta endpoints that its clients read beside the text ones.

/status/models/{name}, /status/heartbeat, /status/performance, /status/news (/status/modes: horde/moderation/
routes.py); /teams and
/teams/{id} (this Horde has no teams); /stats/img/totals and /stats/img/models (it makes no images).
"""

from __future__ import annotations

from flask import request as http_request
from flask_restx import Namespace, Resource

from horde import errors
from horde.chat.cards import model_stats
from horde.chat.routes import MODEL_TYPE_PARAM, model_status_model, model_type, status_namespace
from horde.http.request_context import runtime
from horde.http.swagger import body_model
from horde.registry import performance
from horde.registry.news import NEWS
from horde.registry.schemas import (
    HeartbeatSchema,
    ImageModelsSchema,
    ImageTotalsSchema,
    NewspieceSchema,
    PerformanceSchema,
    TeamDetailsSchema,
)
from horde.text import stats as text_stats

HORDE_API_VERSION = "2.0.0"
IMAGE_PERIODS = ("minute", "hour", "day", "month", "total")
heartbeat_model = body_model(status_namespace, "Heartbeat", HeartbeatSchema)
performance_model = body_model(status_namespace, "HordePerformance", PerformanceSchema)
newspiece_model = body_model(status_namespace, "Newspiece", NewspieceSchema)

teams_namespace = Namespace("teams", description="Teams of workers; this Horde has none")
team_model = body_model(teams_namespace, "TeamDetails", TeamDetailsSchema)
image_stats_namespace = Namespace("image_stats", description="Image statistics; this Horde makes no images")
image_totals_model = body_model(image_stats_namespace, "ImgTotals", ImageTotalsSchema)
image_models_model = body_model(image_stats_namespace, "ImgModelStats", ImageModelsSchema)


@status_namespace.route("/models/<path:model_name>")
class OneModel(Resource):
    @status_namespace.doc(params=MODEL_TYPE_PARAM)
    @status_namespace.response(
        200, "The model's entry of the type asked for; [] when nothing serves it", [model_status_model]
    )
    def get(self, model_name: str) -> list[dict]:
        """Without a type, the model's entries of the AI Horde's types (text); `type=chat`: its chat entry."""
        kind = model_type(http_request.args.get("type"), default=None)
        hub = runtime()
        with hub.db.read() as session:
            if kind == "chat":
                return model_stats(session, hub.settings, model_name)
            if kind in (None, "text"):
                return text_stats.model_status(session, hub.settings, model_name)
            return []


@status_namespace.route("/heartbeat")
class Heartbeat(Resource):
    @status_namespace.response(200, "Alive", heartbeat_model)
    def get(self) -> dict:
        """Liveness: the process answers."""
        return {"message": "OK", "version": HORDE_API_VERSION}


@status_namespace.route("/performance")
class Performance(Resource):
    @status_namespace.response(200, "The Horde's load", performance_model)
    def get(self) -> dict:
        """Queued text generations and tokens, online text workers and threads, tokens of the last minute."""
        return performance.performance(runtime())


@status_namespace.route("/news")
class News(Resource):
    @status_namespace.response(200, "The operator's news, newest first", [newspiece_model])
    def get(self) -> list[dict]:
        """The news pieces of the file HORDE_NEWS names; [] without one."""
        return NEWS.pieces(runtime().settings.news_path)


@teams_namespace.route("")
class Teams(Resource):
    @teams_namespace.response(200, "Every team", [team_model])
    def get(self) -> list[dict]:
        """This Horde has no teams."""
        return []


@teams_namespace.route("/<string:team_id>")
class OneTeam(Resource):
    @teams_namespace.response(200, "The team", team_model)
    def get(self, team_id: str) -> dict:
        raise errors.TeamNotFound(f"Team with ID '{team_id}' not found.")


@image_stats_namespace.route("/totals")
class ImageTotals(Resource):
    @image_stats_namespace.response(200, "Images and megapixelsteps per period: none", image_totals_model)
    def get(self) -> dict:
        return {period: {"images": 0, "ps": 0} for period in IMAGE_PERIODS}


@image_stats_namespace.route("/models")
class ImageModels(Resource):
    @image_stats_namespace.response(200, "Images per model: none", image_models_model)
    def get(self) -> dict:
        return {"day": {}, "month": {}, "total": {}}
