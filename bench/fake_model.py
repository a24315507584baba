"""A minimal OpenAI-compatible model for benchmarks: each answer in one write.

    python -m bench.fake_model --port P

Raw asyncio, HTTP/1.1 keep-alive, ``TCP_NODELAY``, and every response (head and body,
a streamed one included) goes out in a single ``write``: a response split over two
writes stalls a kept-alive client about 40 ms per call on delayed ACK, which would
measure the fake, not the gateway. ``POST .../chat/completions`` answers one fixed
text; any ``GET`` answers 200 (the readiness probe). It reads bodies by
``Content-Length`` only (no chunked requests): the clients we measure send that.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket

REPLY = "Noted, thank you."
_USAGE = {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
_COMPLETION = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1_780_000_000,
        "model": "fake-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": REPLY},
                "finish_reason": "stop",
            }
        ],
        "usage": _USAGE,
    }
).encode()


def _chunk(choices: list[object], usage: object = None) -> bytes:
    chunk = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_780_000_000,
        "model": "fake-model",
        "choices": choices,
        "usage": usage,
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


_STREAM = b"".join(
    [
        _chunk([{"index": 0, "delta": {"role": "assistant", "content": REPLY}}]),
        _chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
        _chunk([], _USAGE),
        b"data: [DONE]\n\n",
    ]
)


def _response(body: bytes, content_type: str) -> bytes:
    head = (
        f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n"
        f"content-length: {len(body)}\r\nconnection: keep-alive\r\n\r\n"
    )
    return head.encode("ascii") + body


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await reader.readexactly(length) if length else b""
            if head.startswith(b"GET"):
                writer.write(_response(b'{"object":"list","data":[]}', "application/json"))
            elif b'"stream":true' in body:
                writer.write(_response(_STREAM, "text/event-stream"))
            else:
                writer.write(_response(_COMPLETION, "application/json"))
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(_serve, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="a fake model that answers in one write")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(args.port))
