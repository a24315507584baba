"""Bounded connections: a client that sends its request slowly is cut off, and past
``server.max_connections`` requests are answered 503. Raw sockets against a real
``chatgate run``, so what is measured is what a slow-loris client would see.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tests.test_cli import (
    client_for,
    gateway_process,
    inbox_status,
    run_log,
    wait_ready,
    write_yaml,
)

READ_TIMEOUT = 1.0
HEAD = (
    b"POST /webhook/demo?wait=false HTTP/1.1\r\nHost: chatgate\r\n"
    b"Content-Type: application/json\r\n"
)
BODY = b'{"chat_id": "c1", "user_id": "u1", "text": "slow", "message_id": "m-slow"}'


@asynccontextmanager
async def gateway(home: Path, **server: object) -> AsyncIterator[tuple[str, int]]:
    """A ready ``chatgate run`` with these ``server`` settings: its host and port."""
    write_yaml(home, yaml.safe_dump({"server": server}))
    with gateway_process(home, {}) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
        parts = urlsplit(url)
        assert parts.hostname is not None
        assert parts.port is not None
        yield parts.hostname, parts.port


async def until_closed(reader: asyncio.StreamReader) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    started = time.monotonic()
    data = await asyncio.wait_for(reader.read(), timeout=15)
    return data, time.monotonic() - started


async def request(host: str, port: int, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(raw)
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=15)
    writer.close()
    return head


def health(*, close: bool = False) -> bytes:
    extra = b"Connection: close\r\n" if close else b""
    return b"GET /healthz HTTP/1.1\r\nHost: chatgate\r\n" + extra + b"\r\n"


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(b"", id="nothing"),
        pytest.param(HEAD, id="part-of-the-head"),
        pytest.param(
            HEAD + f"Content-Length: {len(BODY)}\r\n\r\n".encode() + BODY[:20],
            id="part-of-the-body",
        ),
    ],
)
async def test_a_request_that_does_not_arrive_in_time_is_cut_off(home: Path, sent: bytes) -> None:
    async with gateway(home, read_timeout_seconds=READ_TIMEOUT) as (host, port):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(sent)
        await writer.drain()
        answer, waited = await until_closed(reader)
        writer.close()
        served = await request(host, port, health(close=True))  # the server is unharmed
    log = run_log(home)

    assert READ_TIMEOUT * 0.9 <= waited < READ_TIMEOUT + 2
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert served.startswith(b"HTTP/1.1 200")
    assert inbox_status(home, "m-slow") is None
    assert "Traceback" not in log


async def test_a_slow_but_timely_client_is_served_and_kept_alive(home: Path) -> None:
    async with gateway(home, read_timeout_seconds=READ_TIMEOUT) as (host, port):
        reader, writer = await asyncio.open_connection(host, port)
        length = f"Content-Length: {len(BODY)}\r\n\r\n".encode()
        for part in (HEAD, length, BODY):  # in three pieces, well inside the timeout
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(READ_TIMEOUT / 5)  # the client's own pace, not a race
        first = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=15)
        await reader.readexactly(int(first.split(b"content-length: ")[1].split(b"\r\n")[0]))
        # The same connection, a second request: its deadline starts with its first byte.
        await asyncio.sleep(READ_TIMEOUT * 0.7)
        writer.write(health(close=True))
        second = await until_closed(reader)
        writer.close()

    assert first.startswith(b"HTTP/1.1 202")
    assert second[0].startswith(b"HTTP/1.1 200")
    assert inbox_status(home, "m-slow") in ("pending", "done")


async def test_past_max_connections_requests_get_503_until_one_closes(home: Path) -> None:
    async with gateway(home, max_connections=3) as (host, port):
        held = []
        for _ in range(3):  # three kept-alive connections, each served once
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(health())
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=15)
            held.append((reader, writer))
        refused = await request(host, port, health(close=True))
        _, writer = held.pop()
        writer.close()
        await writer.wait_closed()
        deadline = time.monotonic() + 10
        while (served := await request(host, port, health(close=True))).startswith(b"HTTP/1.1 503"):
            assert time.monotonic() < deadline, "a freed connection slot was never reused"
            await asyncio.sleep(0.05)  # the server notices the close on its next read
        for _, writer in held:
            writer.close()

    assert refused.startswith(b"HTTP/1.1 503")
    assert served.startswith(b"HTTP/1.1 200")
