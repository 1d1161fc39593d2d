"""One client connection: read each request with h11, run the WSGI app, write its answer, keep alive or close.

Bounded in time: a kept-alive connection that sends no new request within the idle timeout is closed; a
request's line and headers must arrive within the header timeout (from the accept, or from the first byte of
a kept-alive connection's next request), and its body within the body timeout (from the end of its head),
however slowly the bytes trickle in. A blocked write gives up after the idle timeout. Bounded in memory: the
head is read at most HORDE_MAX_HEADER_BYTES at a time and refused above it (431), a body is read only as the
app asks for it, and a body the app did not read is not read either: the connection closes after the answer.

A head the framing rules refuse is answered (400, 431, 501, 505) and the connection closed, so nothing after
it is ever read as a request. Closing with unread input first shuts the sending side and reads what the
client still sends for up to LINGER_S, so that its kernel does not reset the connection before the client
read the answer.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import gevent
import h11

from horde import errors
from horde.serving import environ as environs
from horde.serving import framing
from horde.serving.answers import error_answer
from horde.serving.body import BodyTimedOut, MalformedBody, RequestBody
from horde.serving.registry import ConnectionRegistry, Phase
from horde.serving.response import Answer, AnswerError

if TYPE_CHECKING:
    from horde.config import Settings

log = logging.getLogger(__name__)
#: One read of a body (or of what a closing client still sends): the most a read holds at once.
BODY_READ_BYTES = 64 * 1024
#: One read of a head: usual heads fit in one.
HEAD_READ_BYTES = 16 * 1024
LINGER_S = 1.0
LINGER_MAX_BYTES = 1024 * 1024

#: Called after each answer: (environ, answer, the request's raw headers, seconds it took).
AfterAnswer = Callable[[dict, Answer, list[tuple[bytes, bytes]], float], None]


@dataclass(frozen=True)
class Limits:
    idle_timeout_s: float = 75.0
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_header_bytes: int = 65_536
    oai_prefix: str = "/v1"

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(
            idle_timeout_s=settings.http_idle_timeout_s,
            header_timeout_s=settings.http_header_timeout_s,
            body_timeout_s=settings.http_body_timeout_s,
            max_header_bytes=settings.max_header_bytes,
            oai_prefix=settings.oai_prefix,
        )


class ConnectionShed(BaseException):
    """Raised in a connection shed at the cap, where it waits for its client: it ends without an answer, or,
    when the app waits for its body, the app's read fails as a late body does (408). A BaseException, as
    gevent's own GreenletExit, so that nothing but the loop catches it by mistake."""


class _Closed(Exception):
    """The connection ends here (a refusal was answered, a timeout, the client left)."""


class Connection:
    def __init__(
        self,
        sock: socket.socket,
        peer: Any,
        app: Callable,
        limits: Limits,
        registry: ConnectionRegistry,
        base_environ: dict[str, Any],
        after_answer: AfterAnswer | None = None,
    ) -> None:
        self.phase = Phase.RECEIVING
        self._sock = sock
        self._peer = peer
        self._app = app
        self._limits = limits
        self._registry = registry
        self._base = base_environ
        self._after_answer = after_answer
        self._parser = self._new_parser()
        self._greenlet: Any = None
        self._timeout: float | None = -1.0  # what the socket has now; -1: unknown
        self._waiting = False  # blocked on the client: where a shed may end the greenlet
        self._shed = False
        self._body_deadline = 0.0
        self._bodiless = True
        self._client_closes = False

    # -- the loop ------------------------------------------------------------------------------------------

    def run(self) -> None:
        self._greenlet = gevent.getcurrent()
        try:
            if not self._registry.admit(self):
                refusal = errors.TooManyConnections(
                    "The server holds as many connections as it can, each answering a request. Retry soon.",
                    headers={"Retry-After": "1"},
                )
                self._refuse(refusal, "")
            self._serve_requests()
        except (ConnectionShed, _Closed, OSError, gevent.GreenletExit):
            pass  # socket.timeout is an OSError
        finally:
            self._registry.drop(self)
            self._sock.close()

    def shed(self) -> None:
        """End the connection without an answer: now if it waits for its client, else at its next wait."""
        self._shed = True
        if self._waiting and self._greenlet is not None:
            gevent.kill(self._greenlet, ConnectionShed)

    def _serve_requests(self) -> None:
        leftover = None  # None: the connection's first request
        while True:
            request = self._read_head(leftover)
            self._serve(request, time.monotonic())
            # h11 reads each request; the answers are framed by horde/serving/response.py, so the next request
            # gets a parser of its own, with what already arrived of it.
            leftover = self._parser.trailing_data[0]
            self._parser = self._new_parser()
            if leftover:
                self._parser.receive_data(leftover)

    def _new_parser(self) -> h11.Connection:
        return h11.Connection(h11.SERVER, max_incomplete_event_size=self._limits.max_header_bytes)

    # -- the head ------------------------------------------------------------------------------------------

    def _read_head(self, leftover: bytes | None) -> h11.Request:
        """The next request's head; `leftover` is what arrived of it with the previous one (None: the first)."""
        parser = self._parser
        pieces = [leftover] if leftover else []  # what arrived of this head, for the refusal's status
        budget = self._limits.max_header_bytes - len(leftover or b"")
        if leftover == b"":  # kept alive: wait for the next request's first byte
            self._registry.move(self, Phase.IDLE)
            data = self._receive(HEAD_READ_BYTES, self._limits.idle_timeout_s)
            budget -= len(data)
            pieces.append(data)
            parser.receive_data(data)
        if leftover is not None:  # a new connection is counted in as receiving
            self._registry.move(self, Phase.RECEIVING)
        deadline = time.monotonic() + self._limits.header_timeout_s
        while True:
            try:
                event = parser.next_event()
            except h11.RemoteProtocolError as error:
                if parser.trailing_data[1]:  # the client closed in the middle of its head: nobody to answer
                    raise _Closed from None
                head = b"".join(pieces)
                refusal = framing.parser_refusal(error, head, self._limits.max_header_bytes)
                self._refuse(refusal, framing.request_path(head))
            if type(event) is h11.Request:
                return event
            if event is not h11.NEED_DATA:  # ConnectionClosed: the client closed between requests
                raise _Closed
            if budget <= 0:  # the head is not over yet at HORDE_MAX_HEADER_BYTES
                refusal = framing.head_too_large(self._limits.max_header_bytes)
                self._refuse(refusal, framing.request_path(b"".join(pieces)))
            data = self._receive(min(HEAD_READ_BYTES, budget), deadline - time.monotonic())
            budget -= len(data)
            pieces.append(data)
            parser.receive_data(data)

    # -- one request ---------------------------------------------------------------------------------------

    def _serve(self, request: h11.Request, head_ended: float) -> None:
        """Answer `request`; return when the connection stays open for the next one, else raise _Closed."""
        environ = environs.build(request, self._base, self._sock, self._peer)
        refusal = framing.check_request(request, environ)
        if refusal is not None:
            self._refuse(refusal, environ["PATH_INFO"])
        environ["wsgi.input"] = RequestBody(self._pull_body)
        self._body_deadline = head_ended + self._limits.body_timeout_s
        self._bodiless = not environs.has_body(environ)
        self._client_closes = request.http_version != b"1.1" or environs.asks_to_close(environ)
        if self._bodiless:  # the request is whole: h11 is not asked for its end
            self._registry.move(self, Phase.ANSWERING)
        answer = Answer(self, head_only=request.method == b"HEAD", http_1_1=request.http_version == b"1.1")
        try:
            result = self._app(environ, answer.start_response)
            try:
                for data in result:
                    answer.write(data)
                answer.finish()
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        except (ConnectionShed, OSError, gevent.GreenletExit):
            raise
        except AnswerError:
            log.exception("the app's answer to %s %s breaks HTTP/1.1", environ["REQUEST_METHOD"], environ["PATH_INFO"])
            raise _Closed from None
        except Exception:
            log.exception("error serving %s %s", environ["REQUEST_METHOD"], environ["PATH_INFO"])
            if not answer.started:
                self._refuse(errors.InternalError("The server met an error."), environ["PATH_INFO"])
            raise _Closed from None
        if self._after_answer is not None:
            self._after_answer(environ, answer, request.headers.raw_items(), time.monotonic() - head_ended)
        if self._bodiless:
            if answer.closes:
                raise _Closed
            return
        theirs = self._parser.their_state
        if theirs is h11.DONE and not answer.closes:
            return
        if theirs is h11.DONE or theirs is h11.MUST_CLOSE:  # all of the request was read: nothing to linger for
            raise _Closed
        self._close_lingering()

    def close_after_answer(self) -> bool:
        """Decided as the answer's head goes out: close when the process stops, when the connection was shed,
        and when the body did not all arrive (a body the app did not read, or read only in part)."""
        if self._registry.stopping or self._shed or self._client_closes:
            return True
        if self._bodiless:
            return False
        parser = self._parser
        try:
            while parser.their_state is h11.SEND_BODY:  # what already arrived of an unread body, at most a read
                event = parser.next_event()
                if event is h11.NEED_DATA:
                    return True
        except h11.RemoteProtocolError:
            return True
        return parser.their_state is not h11.DONE

    def _pull_body(self) -> bytes:
        """The body's next bytes, b"" at its end; a malformed or late body is an HTTP error for the app."""
        parser = self._parser
        while True:
            try:
                event = parser.next_event()
            except h11.RemoteProtocolError:
                raise MalformedBody() from None
            if type(event) is h11.Data:
                return bytes(event.data)
            if type(event) is h11.EndOfMessage:
                self._registry.move(self, Phase.ANSWERING)
                return b""
            if parser.they_are_waiting_for_100_continue:
                self.send_now(parser.send(h11.InformationalResponse(status_code=100, headers=[])))
            remaining = self._body_deadline - time.monotonic()
            try:
                if remaining <= 0:
                    raise TimeoutError
                data = self._receive(BODY_READ_BYTES, remaining)
            except (TimeoutError, ConnectionShed):  # shed for a new connection: late too, a 408 for the app
                raise BodyTimedOut() from None
            except OSError:
                raise MalformedBody() from None
            parser.receive_data(data)

    # -- the socket ----------------------------------------------------------------------------------------

    def _receive(self, size: int, timeout_s: float) -> bytes:
        """Up to `size` bytes, or b"" when the client closed; socket.timeout when none came in time."""
        if self._shed:
            raise ConnectionShed
        if timeout_s <= 0:
            raise TimeoutError
        self._sock.settimeout(timeout_s)
        self._timeout = timeout_s
        self._waiting = True
        try:
            return self._sock.recv(size)
        finally:
            self._waiting = False

    def send_now(self, data: bytes) -> None:
        """All of `data`: one send() first, which usually takes it all (gevent's sendall asks the kernel for
        the socket's buffer size on every call), then sendall for what it left. A write blocked for the idle
        timeout (a client that stopped reading) raises socket.timeout."""
        if self._timeout != self._limits.idle_timeout_s:
            self._sock.settimeout(self._limits.idle_timeout_s)
            self._timeout = self._limits.idle_timeout_s
        sent = self._sock.send(data)
        if sent < len(data):
            self._sock.sendall(memoryview(data)[sent:])

    def _refuse(self, refusal: errors.HordeError, path: str) -> NoReturn:
        """Answer `refusal` and close: nothing more of this connection is read as a request."""
        answer = error_answer(refusal, path, self._limits.oai_prefix, time.time())
        try:
            self.send_now(answer)
        except OSError:
            raise _Closed from None
        self._close_lingering()

    def _close_lingering(self) -> NoReturn:
        """Shut the sending side, read and drop what the client still sends (bounded), then close."""
        self._registry.move(self, Phase.IDLE)
        try:
            self._sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + LINGER_S
            left = LINGER_MAX_BYTES
            while left > 0:
                data = self._receive(min(BODY_READ_BYTES, left), deadline - time.monotonic())
                if not data:
                    break
                left -= len(data)
        except (OSError, TimeoutError):
            pass
        raise _Closed


def handler(
    app: Callable,
    limits: Limits,
    registry: ConnectionRegistry,
    base_environ: dict[str, Any],
    after_answer: AfterAnswer | None = None,
) -> Callable[[socket.socket, Any], None]:
    """What gevent's StreamServer runs for each accepted connection."""

    def handle(sock: socket.socket, peer: Any) -> None:
        Connection(sock, peer, app, limits, registry, base_environ, after_answer).run()

    return handle
