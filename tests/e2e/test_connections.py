"""Connections against a real `python -m horde serve`, over raw sockets: timeouts, body limits, descriptors.

The server runs with one-second idle and header timeouts and a 100 kB body
limit. Every wait here is on a condition with a generous deadline; no test
asserts how long anything took.
"""

from __future__ import annotations

import json
import resource
import select
import signal
import socket
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.support.harness import Harness, unique_model
from tests.support.processes import GunicornServer, wait_until

BODY_LIMIT_BYTES = 100_000
SHORT_SETTINGS = {
    "HORDE_HTTP_IDLE_TIMEOUT_S": 1,
    "HORDE_HTTP_HEADER_TIMEOUT_S": 1,
    "HORDE_MAX_BODY_BYTES": BODY_LIMIT_BYTES,
}
PATIENCE_S = 30.0
IDLE_CONNECTIONS = 2000


@pytest.fixture(scope="module")
def short(tmp_path_factory):
    harness = Harness(f"sqlite:///{tmp_path_factory.mktemp('conn') / 'horde.db'}", SHORT_SETTINGS)
    yield harness
    harness.close()


def connect(harness) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", harness.server.port), timeout=PATIENCE_S)
    return sock


def closed_by_server(sock: socket.socket, keep_sending: bytes = b"") -> bool:
    """Wait (up to PATIENCE_S) for the server to close; optionally trickle bytes meanwhile, slowloris style."""
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        if keep_sending:
            try:
                sock.sendall(keep_sending)
            except OSError:
                return True
        if readable_within(sock, 0.2):
            try:
                if sock.recv(65536) == b"":
                    return True
            except OSError:
                return True
    return False


def read_response(sock: socket.socket) -> tuple[int, dict, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return int(lines[0].split()[1]), headers, rest


def test_an_idle_kept_alive_connection_is_closed(short):
    sock = connect(short)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    status, headers, _ = read_response(sock)
    assert status == 200 and headers.get("connection", "").lower() != "close"
    assert closed_by_server(sock)


def test_a_connection_that_sends_nothing_is_closed(short):
    assert closed_by_server(connect(short))


def test_headers_trickled_byte_by_byte_are_cut_off(short):
    """Each byte arrives well within any per-read timeout; the header deadline still ends it."""
    sock = connect(short)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    assert closed_by_server(sock, keep_sending=b"X")


def test_a_long_poll_is_not_idle(short):
    """A pop waiting three times the idle timeout still answers, and the connection serves the next call."""
    key = short.user(trusted=True)
    with requests.Session() as session:
        body = {"name": "poller", "models": [unique_model()], "max_length": 64, "max_context_length": 512, "wait": 3}
        popped = session.post(
            short.url + "/api/v2/generate/chat/pop", json=body, headers={"apikey": key}, timeout=PATIENCE_S
        )
        assert popped.status_code == 200 and popped.json()["id"] is None
        assert session.get(short.url + "/health", timeout=PATIENCE_S).status_code == 200


@pytest.mark.parametrize("path, native", [("/v1/chat/completions", False), ("/api/v2/generate/chat/async", True)])
def test_a_declared_large_body_is_refused_before_it_is_sent(short, path, native):
    """Only the headers go out; the 413 comes back without the server waiting for a byte of the body."""
    sock = connect(short)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {100 * 1024 * 1024}\r\n\r\n".encode()
    )
    status, headers, body = read_response(sock)
    assert status == 413 and headers["connection"].lower() == "close"
    answer = json.loads(body)
    assert (answer["rc"] if native else answer["error"]["code"]) == "request_too_large"
    assert closed_by_server(sock)


def test_a_chunked_body_is_counted_while_read(short):
    sock = connect(short)
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    chunk = b"x" * 10_000
    try:
        for _ in range(BODY_LIMIT_BYTES // len(chunk) + 5):
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    except OSError:
        pass  # the server may close before the last chunks
    status, _, body = read_response(sock)
    assert (status, json.loads(body)["error"]["code"]) == (413, "request_too_large")


@pytest.mark.parametrize("path, native", [("/v1/chat/completions", False), ("/api/v2/generate/chat/async", True)])
def test_a_malformed_chunked_body_is_400(short, path, native):
    sock = connect(short)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n".encode()
    )
    status, _, body = read_response(sock)
    answer = json.loads(body)
    assert status == 400
    assert (answer["rc"] if native else answer["error"]["code"]) == "BadRequest"


def test_v1_calls_succeed_with_thousands_of_idle_connections_open(tmp_path):
    """Descriptors above 1024: the front's closed-client check must not take them for closed clients (499)."""
    _allow_open_files(IDLE_CONNECTIONS + 500)  # the server raises its own limit at start
    harness = Harness(f"sqlite:///{tmp_path / 'horde.db'}", {"HORDE_HTTP_HEADER_TIMEOUT_S": 600})
    idle: list[socket.socket] = []
    try:
        model = unique_model()
        harness.worker([model])
        for _ in range(IDLE_CONNECTIONS):
            idle.append(socket.create_connection(("127.0.0.1", harness.server.port), timeout=PATIENCE_S))
        assert requests.get(harness.url + "/health", timeout=PATIENCE_S).status_code == 200  # all accepted by now
        client = harness.openai(timeout=PATIENCE_S)
        for index in range(3):
            reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": f"n{index}"}])
            assert reply.choices[0].message.content == f"You wrote: n{index}"
        assert not any(closed for closed in (_closed_now(sock) for sock in idle[:50]))
    finally:
        for sock in idle:
            sock.close()
        harness.close()


def _allow_open_files(count: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count:
        if hard != resource.RLIM_INFINITY and hard < count:
            pytest.skip(f"the hard limit on open files ({hard}) is below {count}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, hard))


def _closed_now(sock: socket.socket) -> bool:
    return readable_within(sock, 0) and sock.recv(1, socket.MSG_PEEK) == b""


def readable_within(sock: socket.socket, timeout_s: float) -> bool:
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(timeout_s * 1000))


def test_the_gunicorn_worker_class_applies_the_timeouts(tmp_path):
    """The production command's worker class closes idle and slowloris connections like `horde serve`."""
    import subprocess
    import sys

    from tests.support.processes import ROOT, base_env, free_port, wait_until

    port = free_port()
    env = base_env(f"sqlite:///{tmp_path / 'horde.db'}", **SHORT_SETTINGS)
    log = open(tmp_path / "gunicorn.log", "wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-k",
            "horde.gunicorn_worker.HordeWorker",
            "-w",
            "1",
            "-b",
            f"127.0.0.1:{port}",
            "horde.wsgi:app",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(lambda: _healthy(f"http://127.0.0.1:{port}"), what="gunicorn to answer /health")
        sock = socket.create_connection(("127.0.0.1", port), timeout=PATIENCE_S)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(sock)[0] == 200
        slow = socket.create_connection(("127.0.0.1", port), timeout=PATIENCE_S)
        slow.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        with ThreadPoolExecutor(1) as pool:  # the idle and the header timeout run side by side
            trickled = pool.submit(closed_by_server, slow, keep_sending=b"X")
            assert closed_by_server(sock)
            assert trickled.result()
    finally:
        process.send_signal(signal.SIGQUIT)  # gunicorn's quick stop: the graceful one is test_shutdown.py's
        process.wait(15)
        log.close()


def _healthy(url: str) -> bool:
    try:
        return requests.get(url + "/health", timeout=1).status_code == 200
    except requests.RequestException:
        return False


def test_the_sdk_sees_the_413_of_a_body_it_is_still_sending(short):
    """The server answers without reading the body and closes; the OpenAI SDK still reads the refusal."""
    import openai

    client = short.openai(timeout=PATIENCE_S)
    with pytest.raises(openai.APIStatusError) as refused:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x" * (50 * BODY_LIMIT_BYTES)}])
    assert refused.value.status_code == 413
    assert refused.value.body["code"] == "request_too_large"


@pytest.mark.parametrize(
    "block, status",
    [
        (b"Host: x\r\nnot a field\r\n\r\n", 400),
        (b"Host: x\r\nX: " + b"a" * 70_000 + b"\r\n\r\n", 431),
        (b"Host: x\r\n" + b"".join(b"X-%d: v\r\n" % n for n in range(100)) + b"\r\n", 431),
    ],
    ids=["a line that is not a field", "a block over 64 KiB", "over 100 lines"],
)
def test_a_header_block_the_server_cannot_read_is_refused(short, block, status):
    sock = connect(short)
    sock.sendall(b"GET /health HTTP/1.1\r\n" + block)
    assert read_response(sock)[0] == status
    assert closed_by_server(sock)


def test_a_folded_header_reaches_the_application_as_one_value(short):
    """An obsolete folded line continues the field before it: here the API key sits on the folded line."""
    key = short.user(kudos=7)
    sock = connect(short)
    sock.sendall(b"GET /api/v2/find_user HTTP/1.1\r\nHost: x\r\napikey:\r\n " + key.encode() + b"\r\n\r\n")
    status, _, body = read_response(sock)
    assert status == 200 and json.loads(body)["kudos"] == 7


@pytest.mark.parametrize(
    "path, shape",
    [
        ("/v1/messages/count_tokens", "front"),
        ("/v1/chat/completions", "front"),
        ("/api/v2/generate/text/async", "native"),
    ],
)
def test_a_body_of_too_many_objects_is_refused_before_it_is_parsed(horde, path, shape):
    """The issue's count_tokens body, scaled down to 200,000 empty text blocks (6 MB): refused, in the path's shape."""
    from horde.http.request_json import MAX_BODY_CONTAINERS

    blocks = [{"type": "text", "text": ""}] * (2 * MAX_BODY_CONTAINERS)
    body = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": blocks}], "prompt": blocks}
    answer = requests.post(
        horde.url + path, json=body, headers={"Authorization": "Bearer 0000000000"}, timeout=PATIENCE_S
    )
    assert answer.status_code == 400
    message = answer.json()["error"]["message"] if shape == "front" else answer.json()["message"]
    assert message.startswith(f"The JSON body holds more than {MAX_BODY_CONTAINERS} objects and arrays.")


CAP = 4
#: How long the capped server's pops wait: they must still be answering when the newcomer comes, which takes
#: well under 0.2 s from the first pop even with the two cores loaded four times over.
CAPPED_POP_WAIT_S = 3


class OneGunicornProcess(GunicornServer):
    WORKERS = 1  # the cap is per process: one, so that every connection meets the same cap

    def stop(self, sig=signal.SIGQUIT, timeout_s: float = 10.0) -> int:
        """gunicorn's quick stop (a second sooner than SIGTERM's): the graceful one is test_shutdown.py's."""
        return super().stop(sig, timeout_s)


@pytest.fixture(params=["serve", "gunicorn"])
def capped(request, tmp_path):
    """A server at a cap of CAP connections: HORDE_MAX_CONNECTIONS, or gunicorn's --worker-connections."""
    gunicorn = request.param == "gunicorn"
    harness = Harness(
        f"sqlite:///{tmp_path / 'horde.db'}", {"HORDE_MAX_CONNECTIONS": CAP}, servers=0 if gunicorn else 1
    )
    server = harness.server
    if gunicorn:
        server = OneGunicornProcess(dict(harness.env, GUNICORN_CMD_ARGS=f"--worker-connections {CAP}"))
        harness.servers.append(server)
    yield harness, server
    harness.close()


def served_health(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=PATIENCE_S)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert read_response(sock)[0] == 200
    return sock


def test_at_the_cap_the_longest_idle_connection_is_shed_for_a_new_one(capped):
    _, server = capped
    idle = [served_health(server.port) for _ in range(CAP)]  # all kept alive, idle, the first the longest
    newcomer = served_health(server.port)
    assert closed_by_server(idle[0])
    for sock in idle[1:] + [newcomer]:  # the others were not shed: each still serves
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(sock)[0] == 200


def test_at_the_cap_with_every_connection_answering_a_new_one_is_refused(capped):
    """Long-polling pops are never shed: the newcomer gets 503 too_many_connections, and the pops answer."""
    harness, server = capped
    key = harness.user(trusted=True)
    names = [f"capped-{uuid.uuid4().hex[:8]}" for _ in range(CAP)]
    pops = []
    for name in names:
        body = json.dumps(
            {
                "name": name,
                "models": [unique_model()],
                "max_length": 64,
                "max_context_length": 512,
                "wait": CAPPED_POP_WAIT_S,
            }
        )
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE_S)
        sock.sendall(
            b"POST /api/v2/generate/chat/pop HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"apikey: {key}\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode()
        )
        pops.append(sock)
    wait_until(lambda: _checked_in(harness, names), timeout_s=PATIENCE_S, what="every pop to be answering")
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE_S)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    status, headers, answer = read_response(sock)
    assert (status, json.loads(answer)["rc"], headers["retry-after"]) == (503, "too_many_connections", "1")
    assert closed_by_server(sock)
    for sock in pops:
        status, _, answer = read_response(sock)
        assert status == 200 and json.loads(answer)["id"] is None


def _checked_in(harness, names: list[str]) -> bool:
    """Every pop's worker checked in: each pop read its body and runs in the app."""
    from sqlalchemy import func, select

    from horde.workers.models import Worker

    with harness.runtime.db.read() as session:
        return session.scalar(select(func.count()).select_from(Worker).where(Worker.name.in_(names))) == len(names)
