"""uvicorn's HTTP protocol with a deadline for reading each request.

uvicorn times out idle keep-alive connections, but not a client that connects and
then sends its request head, or its body, a byte at a time: such a connection stays
open for as long as the client likes, and a few hundred of them hold the server's
connections and file descriptors (slow loris). Here every request must arrive whole,
head and body, within ``read_timeout`` seconds of its first byte (or of the
connection, for the first request); otherwise the client is answered ``408`` (unless
a response has begun) and the connection is closed. The wait for the next request on
a kept-alive connection stays uvicorn's ``timeout_keep_alive``. The deadline is checked
by ``gateway.http_server.GracefulServer`` on each of its ticks (ten a second).

A subclass of uvicorn's httptools protocol (what ``uvicorn[standard]`` runs): uvicorn
has no setting for this, and the subclass only notes the time in the parser's message
callbacks. ``tests/test_http_limits.py`` holds it to its promise on every
uvicorn upgrade.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

TIMEOUT_BODY = b"request not received in time"
REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: " + str(len(TIMEOUT_BODY)).encode() + b"\r\n"
    b"connection: close\r\n\r\n" + TIMEOUT_BODY
)


class ReadDeadlineProtocol(HttpToolsProtocol):
    """See the module docstring; ``read_timeout`` is set by ``with_read_timeout``.

    The protocol notes when the request it is reading began; the server calls
    ``check_read_deadline`` on every connection a few times a second. A timer per
    request (``call_later`` and ``cancel``) cost ~2.3 us on uvloop; noting the time ~0.06.
    """

    read_timeout: float = 30.0
    # Loop time at which the request being read began; None while none is being read.
    _reading_since: float | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._reading_since = self.loop.time()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._reading_since is None:
            self._reading_since = self.loop.time()

    def on_message_complete(self) -> None:
        self._reading_since = None
        super().on_message_complete()

    def handle_websocket_upgrade(self) -> None:
        self._reading_since = None  # the WebSocket protocol keeps its own time
        super().handle_websocket_upgrade()

    def check_read_deadline(self, now: float) -> None:
        """Cut the connection off if its request has been arriving for too long."""
        since = self._reading_since
        if since is None or now - since < self.read_timeout or self.transport.is_closing():
            return
        self._reading_since = None
        cycle = self.cycle  # the latest request with a complete head, if any
        if cycle is None or not cycle.response_started or cycle.response_complete:
            self.transport.write(REQUEST_TIMEOUT)
        self.transport.close()


def with_read_timeout(seconds: float) -> type[ReadDeadlineProtocol]:
    """The protocol class for a server whose requests must arrive within ``seconds``."""
    return type("ReadDeadlineProtocol", (ReadDeadlineProtocol,), {"read_timeout": seconds})
