"""Image fetching against local servers on loopback: one deadline per image, one resolution per host."""

from __future__ import annotations

import socket

import pytest

from tests.integration.helpers import ALL_FEATURES, pop, queue
from tests.support.image_server import running_image_server


def image_message(url):
    return [
        {
            "role": "user",
            "content": [{"type": "text", "text": "what is it"}, {"type": "image_url", "image_url": {"url": url}}],
        }
    ]


@pytest.fixture
def image_server():
    with running_image_server() as server:
        yield server


@pytest.fixture
def owner(client, make_user):
    _, key = make_user("owner")
    pop(client, key, features=ALL_FEATURES)
    return key


def test_a_trickled_image_is_cut_off_at_the_deadline(client, owner, image_server, runtime):
    """40 bytes at one per 0.2 s: every read is quick, the whole takes 8 s, the deadline is 1 s."""
    runtime.settings = runtime.settings.replace(image_fetch_timeout_s=1.0)
    response = queue(client, owner, messages=image_message(image_server.url + "/trickle.png"))
    assert (response.status_code, response.json["rc"]) == (400, "ImageFetchFailed")
    assert "longer than 1 s" in response.json["message"]
    assert response.json["param"] == "messages[0].content[1].image_url.url"


def test_the_host_is_resolved_once_and_the_checked_address_is_used(client, owner, image_server, runtime, monkeypatch):
    """A rebinding resolver: the first answer is the allowed loopback address, any later one another address.

    A fetch that resolved again to connect would reach 127.0.0.2, where nothing listens.
    """
    runtime.settings = runtime.settings.replace(image_fetch_allow=("127.0.0.1/32",))
    system_resolver = socket.getaddrinfo
    answers = []

    def rebinding(host, port, *args, **kwargs):
        if host != "images.rebind.test":
            return system_resolver(host, port, *args, **kwargs)
        address = "127.0.0.1" if not answers else "127.0.0.2"
        answers.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    url = f"http://images.rebind.test:{image_server.port}/pixel.png"
    response = queue(client, owner, messages=image_message(url))
    assert response.status_code == 202, response.json
    assert answers == ["127.0.0.1"]
    assert image_server.hosts == [f"images.rebind.test:{image_server.port}"]


def test_a_rebinding_answer_to_a_private_address_is_refused(client, owner, runtime, monkeypatch):
    runtime.settings = runtime.settings.replace(image_fetch_allow=())
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, port, *args, **kwargs: [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("64:ff9b::7f00:1", port, 0, 0))
        ],
    )
    response = queue(client, owner, messages=image_message("http://images.rebind.test/pixel.png"))
    assert (response.status_code, response.json["rc"]) == (400, "ImageUrlForbidden")
