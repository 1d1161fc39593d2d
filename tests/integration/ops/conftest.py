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
    app.test_client_class = BufferedClient
    return app.test_client()


@pytest.fixture
def client(app):
    return buffered_client(app)
