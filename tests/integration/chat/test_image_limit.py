"""At most HORDE_MAX_IMAGES_PER_REQUEST images a request, refused before anything is fetched or queued."""

import base64

import pytest

from horde.chat.models import ChatRequest
from horde.config import Settings
from tests.integration.helpers import ALL_FEATURES, pop, queue

PIXEL_URL = (
    "data:image/png;base64,"
    + base64.b64encode(
        base64.b64decode(
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
        )
    ).decode()
)


def images(count: int, url: str = PIXEL_URL) -> list[dict]:
    return [{"type": "image_url", "image_url": {"url": url}} for _ in range(count)]


def spread(first: int, second: int, url: str = PIXEL_URL) -> list[dict]:
    """`first` images in messages[0]; a text part then `second` images in messages[2]."""
    return [
        {"role": "user", "content": images(first, url)},
        {"role": "assistant", "content": "I see."},
        {"role": "user", "content": [{"type": "text", "text": "and these?"}, *images(second, url)]},
    ]


@pytest.fixture
def vision_worker(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner, features=ALL_FEATURES)
    return owner


def queued_requests(runtime) -> int:
    with runtime.db.read() as session:
        return session.query(ChatRequest).count()


def test_the_default_limit_is_sixteen_images():
    assert Settings.from_env({}).max_images_per_request == 16
    assert Settings.from_env({"HORDE_MAX_IMAGES_PER_REQUEST": "3"}).max_images_per_request == 3


def test_sixteen_images_are_admitted(client, vision_worker):
    assert queue(client, vision_worker, messages=spread(10, 6)).status_code == 202


def test_the_seventeenth_image_is_refused_where_it_is(client, vision_worker, runtime):
    response = queue(client, vision_worker, messages=spread(10, 7))
    assert (response.status_code, response.json["rc"]) == (400, "UnsupportedChatParameter")
    assert response.json["param"] == "messages[2].content[7]"
    assert "16 images" in response.json["message"]
    assert queued_requests(runtime) == 0


def test_images_over_the_limit_are_not_fetched(client, vision_worker, runtime):
    """A forbidden URL would be refused as it is fetched; the count is checked first, so nothing is fetched."""
    content = [{"type": "text", "text": "what are they?"}, *images(17, "http://10.0.0.1/x.png")]
    response = queue(client, vision_worker, messages=[{"role": "user", "content": content}])
    assert (response.json["rc"], response.json["param"]) == ("UnsupportedChatParameter", "messages[0].content[17]")


def test_the_limit_follows_the_setting(client, vision_worker, runtime, settings):
    runtime.settings = settings.replace(max_images_per_request=2)
    assert queue(client, vision_worker, messages=spread(1, 1)).status_code == 202
    response = queue(client, vision_worker, messages=spread(2, 1))
    assert (response.json["rc"], response.json["param"]) == ("UnsupportedChatParameter", "messages[2].content[1]")


def test_the_front_refuses_too_many_images_before_queueing(client, vision_worker, runtime):
    body = {"model": "m1", "messages": spread(16, 1)}
    response = client.post("/v1/chat/completions", json=body, headers={"Authorization": "Bearer 0000000000"})
    assert response.status_code == 400
    error = response.json["error"]
    assert (error["code"], error["param"], error["type"]) == (
        "UnsupportedChatParameter",
        "messages[2].content[1]",
        "invalid_request_error",
    )
    assert queued_requests(runtime) == 0
