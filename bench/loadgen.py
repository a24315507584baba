"""Load generator: N webhook messages over C chats, one request in flight per chat.

Each chat is a worker that posts its messages one after the other (a real chat
waits for the answer before it speaks again); the C workers run concurrently,
either back to back (a closed loop: the server is saturated and latency is mostly
queueing) or paced to offer a fixed total rate (latency at a given load). Two
interchangeable clients send the same bytes: ``raw`` (HTTP/1.1 keep-alive written
straight on an asyncio stream, one connection per chat, the lightest possible) and
``httpx`` (``httpx.AsyncClient``), so the client's own cost can be measured.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import httpx

from adapters.webhook.auth import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

ClientKind = Literal["raw", "httpx"]
REQUEST_TIMEOUT_SECONDS = 60.0


class LoadError(Exception):
    """A response that was not a 200 carrying a reply to the message sent."""


class Poster(Protocol):
    """Sends one POST and returns (status, body)."""

    async def post(
        self, path: str, body: bytes, headers: Mapping[str, str]
    ) -> tuple[int, bytes]: ...

    async def aclose(self) -> None: ...


class RawPoster:
    """One keep-alive HTTP/1.1 connection; requests on it are strictly sequential."""

    def __init__(self, host: str, port: int) -> None:
        self._host = host
        self._port = port
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: bytes, headers: Mapping[str, str]) -> tuple[int, bytes]:
        reader, writer = await self._open()
        extra = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        head = (
            f"POST {path} HTTP/1.1\r\nhost: {self._host}:{self._port}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n{extra}\r\n"
        )
        writer.write(head.encode("ascii") + body)
        raw_head = await reader.readuntil(b"\r\n\r\n")
        status, length, close = _parse_head(raw_head)
        payload = await reader.readexactly(length)
        if close:
            await self.aclose()
        return status, payload

    async def aclose(self) -> None:
        if self._streams is not None:
            writer = self._streams[1]
            self._streams = None
            writer.close()
            await writer.wait_closed()

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self._host, self._port)
        return self._streams


def _parse_head(raw: bytes) -> tuple[int, int, bool]:
    lines = raw.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length: int | None = None
    close = False
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "connection":
            close = value.strip().lower() == "close"
    if length is None:
        raise LoadError("response without content-length")
    return status, length, close


class HttpxPoster:
    """A chat's view of one shared ``httpx.AsyncClient``."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def post(self, path: str, body: bytes, headers: Mapping[str, str]) -> tuple[int, bytes]:
        response = await self._client.post(
            path, content=body, headers={"content-type": "application/json", **headers}
        )
        return response.status_code, response.content

    async def aclose(self) -> None:
        """The shared client is closed by whoever opened it."""


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    host: str
    port: int
    path: str = "/webhook/bench"
    # Sign every request with this webhook secret (the gateway runs with it).
    secret: str | None = None

    def headers(self, body: bytes) -> dict[str, str]:
        """The signature headers for one POST of ``body`` (none without a secret)."""
        if self.secret is None:
            return {}
        timestamp = str(int(time.time()))
        signature = sign(self.secret, timestamp, "POST", self.path, body)
        return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: signature}


@dataclass(slots=True)
class LoadResult:
    target: str
    sent: int
    seconds: float
    latencies: list[float] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.sent / self.seconds if self.seconds > 0 else 0.0

    def percentile_ms(self, fraction: float) -> float:
        """The latency below which ``fraction`` of requests finished, in ms."""
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        index = min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))
        return ordered[index] * 1000.0


def split(total: int, chats: int) -> list[int]:
    """How many of ``total`` messages each of ``chats`` chats sends."""
    base, extra = divmod(total, chats)
    return [base + (1 if i < extra else 0) for i in range(chats)]


def message_body(phase: str, chat: int, seq: int) -> tuple[str, bytes]:
    message_id = f"{phase}-{chat}-{seq}"
    body = {
        "chat_id": f"chat-{chat}",
        "user_id": f"user-{chat}",
        "text": f"hello number {seq} from chat {chat}",
        "message_id": message_id,
    }
    return message_id, json.dumps(body).encode()


def check_reply(status: int, payload: bytes, message_id: str) -> None:
    """Raise ``LoadError`` unless this is a 200 answering ``message_id`` with a reply."""
    if status != 200:
        raise LoadError(f"{message_id}: HTTP {status}: {payload[:200]!r}")
    data = json.loads(payload)
    replies = data.get("replies")
    if data.get("message_id") != message_id or not replies or not replies[0].get("text"):
        raise LoadError(f"{message_id}: no reply in {payload[:200]!r}")


@dataclass(frozen=True, slots=True)
class Pace:
    """When a chat sends: back to back (``interval`` 0) or on a fixed schedule."""

    interval: float = 0.0
    offset: float = 0.0

    async def wait_turn(self, started: float, seq: int) -> None:
        if self.interval <= 0:
            return
        delay = started + self.offset + seq * self.interval - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)


async def _chat(
    poster: Poster, target: Target, phase: str, chat: int, count: int, pace: Pace
) -> list[float]:
    latencies: list[float] = []
    started = time.perf_counter()
    for seq in range(count):
        message_id, body = message_body(phase, chat, seq)
        await pace.wait_turn(started, seq)
        sent = time.perf_counter()
        async with asyncio.timeout(REQUEST_TIMEOUT_SECONDS):
            status, payload = await poster.post(target.path, body, target.headers(body))
        latencies.append(time.perf_counter() - sent)
        check_reply(status, payload, message_id)
    return latencies


async def _run_chats(
    posters: Sequence[Poster], target: Target, phase: str, counts: Sequence[int], rate: float
) -> LoadResult:
    # With a rate, each chat sends every chats/rate seconds, the chats evenly staggered.
    interval = len(counts) / rate if rate > 0 else 0.0
    paces = [Pace(interval, interval * i / len(counts)) for i in range(len(counts))]
    started = time.perf_counter()
    chats = enumerate(zip(posters, counts, paces, strict=True))
    per_chat = await asyncio.gather(
        *(_chat(poster, target, phase, i, n, pace) for i, (poster, n, pace) in chats)
    )
    seconds = time.perf_counter() - started
    latencies = [lat for chat in per_chat for lat in chat]
    return LoadResult(target.name, len(latencies), seconds, latencies)


async def run_load(
    target: Target,
    kind: ClientKind,
    *,
    messages: int,
    chats: int,
    phase: str,
    rate: float = 0.0,
) -> LoadResult:
    """Send ``messages`` over ``chats`` concurrent chats and time every request.

    ``rate`` 0 is a closed loop (each chat sends again as soon as it is answered);
    otherwise the chats together offer ``rate`` messages per second.
    """
    counts = split(messages, chats)
    if kind == "httpx":
        limits = httpx.Limits(max_connections=chats, max_keepalive_connections=chats)
        base = f"http://{target.host}:{target.port}"
        async with httpx.AsyncClient(
            base_url=base, limits=limits, timeout=None, trust_env=False
        ) as client:
            return await _run_chats([HttpxPoster(client)] * chats, target, phase, counts, rate)
    posters = [RawPoster(target.host, target.port) for _ in range(chats)]
    try:
        return await _run_chats(posters, target, phase, counts, rate)
    finally:
        for poster in posters:
            await poster.aclose()
