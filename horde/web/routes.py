"""Serves the page at `/` and its files under /ui/; no build step, no server-side rendering."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, send_from_directory

STATIC_DIR = Path(__file__).with_name("static")
#: The files change with the code; a browser revalidates them rather than keep a stale copy.
MAX_AGE_S = 0


def make_blueprint() -> Blueprint:
    blueprint = Blueprint("web", __name__, static_folder=str(STATIC_DIR), static_url_path="/ui")

    @blueprint.get("/")
    def index():
        return send_from_directory(STATIC_DIR, "index.html", max_age=MAX_AGE_S)

    return blueprint
