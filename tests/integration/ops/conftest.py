"""A test client that closes each answer, as a server does once the last byte is out: the request
observer writes its log line and counts its metrics then."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient


class BufferedClient(FlaskClient):
    def open(self, *args, **kwargs):
        kwargs.setdefault("buffered", True)
        return super().open(*args, **kwargs)


def buffered_client(app):
    """A BufferedClient of the app, leaving the app's own client class alone (tests share their app)."""
    return BufferedClient(app, app.response_class)


@pytest.fixture
def client(app):
    return buffered_client(app)
