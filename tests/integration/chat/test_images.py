"""Images: data: URLs decoded, http(s) URLs fetched once with SSRF refusals, +5 kudos each."""

import base64
import http.server
import threading

import pytest

from tests.support.native import ALL_FEATURES, pop, queue

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
)


def image_message(url):
    return [
        {
            "role": "user",
            "content": [{"type": "text", "text": "what is it"}, {"type": "image_url", "image_url": {"url": url}}],
        }
    ]


@pytest.fixture
def image_server():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", "/pixel.png")
                self.end_headers()
                return
            if self.path == "/loop":
                self.send_response(302)
                self.send_header("Location", "/loop")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "image/png" if self.path.endswith(".png") else "text/html")
            self.end_headers()
            self.wfile.write(PNG)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def vision_worker(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner, features=ALL_FEATURES)
    return owner


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/x.png",
        "http://169.254.169.254/latest",
        "http://[::1]/x.png",
        "http://192.168.1.1/x.png",
        "http://localhost/x.png",
    ],
)
def test_non_public_addresses_are_refused_before_queueing(client, vision_worker, url, settings, runtime):
    runtime.settings = settings.replace(image_fetch_allow=())
    response = queue(client, vision_worker, messages=image_message(url))
    assert response.status_code == 400
    assert response.json["rc"] == "ImageUrlForbidden"
    assert response.json["param"] == "messages[0].content[1].image_url.url"
    assert pop(client, vision_worker, features=ALL_FEATURES)["id"] is None


def test_allowed_url_is_fetched_once_and_inlined_with_redirects(client, vision_worker, image_server):
    response = queue(client, vision_worker, messages=image_message(image_server + "/redirect"))
    assert response.status_code == 202, response.json
    job = pop(client, vision_worker, features=ALL_FEATURES)
    url = job["payload"]["messages"][0]["content"][1]["image_url"]["url"]
    assert url == "data:image/png;base64," + base64.b64encode(PNG).decode()


def test_redirect_loops_and_non_images_are_refused(client, vision_worker, image_server):
    loop = queue(client, vision_worker, messages=image_message(image_server + "/loop"))
    assert (loop.status_code, loop.json["rc"]) == (400, "ImageFetchFailed")
    page = queue(client, vision_worker, messages=image_message(image_server + "/page"))
    assert (page.status_code, page.json["rc"]) == (400, "ImageFetchFailed")


def test_each_image_adds_five_kudos(client, vision_worker):
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    plain = queue(client, vision_worker).json["kudos"]
    with_image = queue(client, vision_worker, messages=image_message(data_url)).json["kudos"]
    assert with_image == plain + 5 or with_image == plain + 6  # the image also adds prompt tokens


def test_bad_data_url_is_refused(client, vision_worker):
    response = queue(client, vision_worker, messages=image_message("data:image/png;base64,@@@"))
    assert (response.status_code, response.json["rc"]) == (400, "BadRequest")
