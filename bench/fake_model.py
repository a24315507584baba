"""An OpenAI-compatible model server for the benches: every answer in one write.

``POST .../chat/completions`` answers a fixed reply after ``--delay-ms`` (default 0),
as one JSON body, or as Server-Sent Events when the request asks ``"stream": true``.
Each response, head and body, goes out in a single ``write`` on a socket with
``TCP_NODELAY``: a response sent as two writes stalls a kept-alive client about 40 ms
on delayed ACK, which would measure the fake, not the gateway. ``GET /readyz`` answers
200 (``bench.servers.ServerProcess`` waits for it).

A plain asyncio protocol on uvloop (when installed) with its own HTTP/1.1 keep-alive
parsing: no framework cost on the fake's side of the measurement.

    .venv/bin/python -m bench.fake_model --port 8091 [--delay-ms 50] [--reply "ok"]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import time
from collections.abc import Callable
from typing import cast

REPLY = "ok"
HEAD_END = b"\r\n\r\n"
MAX_HEAD = 64 * 1024


def completion(reply: str, model: str) -> bytes:
    """A whole ``chat.completion`` object."""
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }
    return json.dumps(body).encode()


def _chunk(model: str, delta: dict[str, str], finish: str | None) -> bytes:
    chunk = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def stream(reply: str, model: str) -> bytes:
    """The same reply as Server-Sent Events: role, one content delta, stop, ``[DONE]``."""
    return b"".join(
        (
            _chunk(model, {"role": "assistant", "content": ""}, None),
            _chunk(model, {"content": reply}, None),
            _chunk(model, {}, "stop"),
            b"data: [DONE]\n\n",
        )
    )


def response(status: str, content_type: str, body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


class ModelProtocol(asyncio.Protocol):
    """One keep-alive connection: requests parsed from the buffer, answered in order."""

    def __init__(self, delay: float, reply: str) -> None:
        self._delay = delay
        self._reply = reply
        self._buffer = b""
        self._transport: asyncio.WriteTransport | None = None
        self._pending: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A TCP transport (uvloop's are not registered as asyncio.Transport subclasses).
        self._transport = cast(asyncio.WriteTransport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while (request := self._take()) is not None:
            self._answer(*request)

    def _take(self) -> tuple[bytes, bytes] | None:
        """The next whole request (its head, its body), or None until more arrives."""
        end = self._buffer.find(HEAD_END)
        if end < 0:
            if len(self._buffer) > MAX_HEAD and self._transport is not None:
                self._transport.close()
            return None
        head = self._buffer[:end]
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        start = end + len(HEAD_END)
        if len(self._buffer) < start + length:
            return None
        body = self._buffer[start : start + length]
        self._buffer = self._buffer[start + length :]
        return head, body

    def _answer(self, head: bytes, body: bytes) -> None:
        method, _, rest = head.partition(b" ")
        path = rest.split(b" ", 1)[0]
        if method == b"GET":
            found = path in (b"/readyz", b"/v1/models", b"/models")
            out = response("200 OK" if found else "404 Not Found", "application/json", b"{}")
            self._send_after(0.0, out)
            return
        request = json.loads(body or b"{}")
        model = str(request.get("model", "bench"))
        if request.get("stream"):
            out = response("200 OK", "text/event-stream", stream(self._reply, model))
        else:
            out = response("200 OK", "application/json", completion(self._reply, model))
        self._send_after(self._delay, out)

    def _send_after(self, delay: float, out: bytes) -> None:
        # Answers leave in request order even when a keep-alive client pipelines.
        loop = asyncio.get_running_loop()
        previous = self._pending
        done: asyncio.Future[None] = loop.create_future()
        self._pending = done

        def send() -> None:
            if previous is not None and not previous.done():
                previous.add_done_callback(lambda _: send())
                return
            if self._transport is not None:
                self._transport.write(out)  # head and body: one write
            done.set_result(None)

        if delay > 0:
            loop.call_later(delay, send)
        else:
            send()


def factory(delay: float, reply: str) -> Callable[[], ModelProtocol]:
    return lambda: ModelProtocol(delay, reply)


async def serve(host: str, port: int, delay: float, reply: str) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(factory(delay, reply), host, port, backlog=1024)
    async with server:
        await server.serve_forever()


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, default=0.0, help="time before each answer")
    parser.add_argument("--reply", default=REPLY)
    args = parser.parse_args(argv)
    try:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            runner.run(serve(args.host, args.port, args.delay_ms / 1000.0, args.reply))
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
