"""The gateway WebSocket side of ``tests.fakes.discord_server.FakeDiscord``.

Connections and sessions, HELLO, heartbeats, IDENTIFY (READY then GUILD_CREATE), RESUME
(replay of missed events, then RESUMED), INVALID_SESSION, REQUEST_GUILD_MEMBERS, and
dispatch: to the live socket, or buffered for RESUME, filtered by the session's intents.
The socket-side faults (``deaf``, ``drop_connection``, ``invalidate_sessions``) live here.
"""

from __future__ import annotations

import asyncio
import copy
import json
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from tests.fakes import discord_payloads as p
from tests.fakes.discord_payloads import APPLICATION_ID, BOT_USER, GUILD_ID, Json

# Gateway intents (https://discord.com/developers/docs/events/gateway#gateway-intents).
INTENT_GUILDS = 1 << 0
INTENT_GUILD_MESSAGES = 1 << 9
INTENT_DIRECT_MESSAGES = 1 << 12
INTENT_MESSAGE_CONTENT = 1 << 15
_GUILD_EVENTS = frozenset({"CHANNEL_CREATE", "THREAD_CREATE", "GUILD_ROLE_CREATE"})
_MESSAGE_EVENTS = frozenset({"MESSAGE_CREATE", "MESSAGE_UPDATE", "MESSAGE_DELETE"})


@dataclass(frozen=True, slots=True)
class _Close:
    code: int


@dataclass(eq=False, slots=True)
class _Connection:
    """One gateway socket; only its writer task sends, everything else queues."""

    websocket: WebSocket
    outbox: asyncio.Queue[Json | _Close] = field(default_factory=asyncio.Queue)
    session: _Session | None = None
    closing: bool = False
    finished: asyncio.Event = field(default_factory=asyncio.Event)

    def send(self, payload: Json) -> None:
        if not self.closing:
            self.outbox.put_nowait(payload)

    def close(self, code: int) -> None:
        if not self.closing:
            self.closing = True
            self.outbox.put_nowait(_Close(code))


@dataclass(eq=False, slots=True)
class _Session:
    session_id: str
    intents: int
    shard: list[int] | None
    seq: int = 0
    events: list[Json] = field(default_factory=list)  # every dispatch, for RESUME replay
    conn: _Connection | None = None
    valid: bool = True


class GatewayMixin:
    """FakeDiscord's gateway: the ``/gateway`` socket endpoint and ``_dispatch``.

    The state below is set up by ``FakeDiscord.__init__``.
    """

    # settings and the world (read here)
    token: str
    heartbeat_interval: float
    ack_heartbeats: bool
    refuse_connections: bool
    message_content_enabled: bool
    channels: dict[str, Json]
    roles: dict[str, Json]
    users: dict[str, Json]
    member_roles: dict[str, list[str]]
    # counters
    identifies: int
    resumes: int
    heartbeats: int
    refused: int
    ready_count: int
    resumed_count: int
    member_requests: int
    # machinery
    _session: _Session | None
    _connections: set[_Connection]
    _deaf_conn: _Connection | None

    if TYPE_CHECKING:  # provided by FakeDiscord

        @property
        def gateway_url(self) -> str: ...

        def _notify(self) -> None: ...

    @property
    def connected(self) -> bool:
        """Whether a gateway socket is open and identified or resumed."""
        return self._session is not None and self._session.conn is not None

    async def _close_connections(self) -> None:
        """Close every socket (1001, going away) and wait until each is finished."""
        connections = list(self._connections)
        for conn in connections:
            conn.close(1001)
        for conn in connections:
            await conn.finished.wait()

    # -- faults -------------------------------------------------------------------------

    @property
    def deaf(self) -> bool:
        """While True the socket live when it was set gets no dispatches (they are lost)."""
        return self._deaf_conn is not None

    @deaf.setter
    def deaf(self, value: bool) -> None:
        session = self._session
        self._deaf_conn = session.conn if value and session is not None else None

    async def drop_connection(self, code: int = 4000) -> None:
        """Close the live socket server-side; the session stays resumable."""
        session = self._session
        conn = session.conn if session is not None else None
        if session is None or conn is None:
            return
        session.conn = None
        conn.close(code)
        await conn.finished.wait()

    def invalidate_sessions(self) -> None:
        """The next RESUME is answered with op 9 INVALID_SESSION (d=false)."""
        if self._session is not None:
            self._session.valid = False

    # -- dispatch and the socket --------------------------------------------------------

    def _dispatch(self, event: str, data: Json) -> None:
        """Send a dispatch to the session: live socket, or buffered for RESUME."""
        session = self._session
        if session is None or not _wanted(session.intents, event, data):
            return
        conn = session.conn
        if conn is not None and conn is self._deaf_conn:
            return  # lost for this session, as if never sent
        session.seq += 1
        visible = _visible(session.intents, event, copy.deepcopy(data))
        payload = {"op": 0, "t": event, "s": session.seq, "d": visible}
        session.events.append(payload)
        if conn is not None:
            conn.send(payload)

    async def _gateway(self, websocket: WebSocket) -> None:
        if self.refuse_connections:
            self.refused += 1
            self._notify()
            await websocket.send_denial_response(
                JSONResponse(p.error_body(0, "503: Service Unavailable"), status_code=503)
            )
            return
        await websocket.accept()
        conn = _Connection(websocket)
        self._connections.add(conn)
        conn.send({"op": 10, "d": {"heartbeat_interval": int(self.heartbeat_interval * 1000)}})
        reader = asyncio.create_task(self._read(conn))
        writer = asyncio.create_task(self._write(conn))
        try:
            await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reader, writer):
                task.cancel()
            await asyncio.gather(reader, writer, return_exceptions=True)
            self._connections.discard(conn)
            if conn.session is not None and conn.session.conn is conn:
                conn.session.conn = None
            if self._deaf_conn is conn:
                self._deaf_conn = None
            conn.finished.set()
            self._notify()

    async def _write(self, conn: _Connection) -> None:
        while True:
            item = await conn.outbox.get()
            if isinstance(item, _Close):
                await conn.websocket.close(item.code)
                return
            await conn.websocket.send_text(json.dumps(item))
            if item.get("t") == "READY":
                self.ready_count += 1
                self._notify()
            elif item.get("t") == "RESUMED":
                self.resumed_count += 1
                self._notify()

    async def _read(self, conn: _Connection) -> None:
        try:
            while True:
                frame = await conn.websocket.receive_text()
                self._on_frame(conn, json.loads(frame))
        except WebSocketDisconnect:
            return

    def _on_frame(self, conn: _Connection, frame: Json) -> None:
        op = frame.get("op")
        data = frame.get("d")
        if op == 1:
            self.heartbeats += 1
            if self.ack_heartbeats:
                conn.send({"op": 11})
        elif op == 2:
            self._identify(conn, data or {})
        elif op == 6:
            self._resume(conn, data or {})
        elif op == 8:
            self._request_members(data or {})
        elif op in (3, 4):
            pass  # presence and voice state: accepted and ignored
        else:
            conn.close(4001)  # unknown opcode
        self._notify()

    def _request_members(self, data: Json) -> None:
        """REQUEST_GUILD_MEMBERS by user ids (no privileged intent needed): one chunk."""
        self.member_requests += 1
        wanted = [str(u) for u in data.get("user_ids") or []]
        members = [
            p.member(self.member_roles.get(uid, []), user=self.users[uid])
            for uid in wanted
            if uid in self.users
        ]
        chunk: Json = {
            "guild_id": str(data.get("guild_id")),
            "members": members,
            "chunk_index": 0,
            "chunk_count": 1,
            "not_found": [u for u in wanted if u not in self.users],
        }
        if data.get("nonce") is not None:
            chunk["nonce"] = data["nonce"]
        self._dispatch("GUILD_MEMBERS_CHUNK", chunk)

    def _identify(self, conn: _Connection, data: Json) -> None:
        self.identifies += 1
        if data.get("token") != self.token:
            conn.close(4004)
            return
        if conn.session is not None:
            conn.close(4005)  # already authenticated
            return
        if (
            int(data.get("intents", 0)) & INTENT_MESSAGE_CONTENT
            and not self.message_content_enabled
        ):
            conn.close(4014)  # "Disallowed intent(s)": not switched on in the developer portal
            return
        session = _Session(secrets.token_hex(16), int(data.get("intents", 0)), data.get("shard"))
        self._take_over(session, conn)
        ready: Json = {
            "v": 10,
            "user": BOT_USER,
            "guilds": [{"id": GUILD_ID, "unavailable": True}],
            "session_id": session.session_id,
            "session_type": "normal",
            "resume_gateway_url": self.gateway_url,
            "application": {"id": APPLICATION_ID, "flags": 0},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "user_settings": {},
            "_trace": ["fake-discord"],
        }
        if session.shard is not None:
            ready["shard"] = session.shard
        self._dispatch("READY", ready)
        self._dispatch("GUILD_CREATE", self._guild_payload())

    def _resume(self, conn: _Connection, data: Json) -> None:
        self.resumes += 1
        if data.get("token") != self.token:
            conn.close(4004)
            return
        session = self._session
        if session is None or not session.valid or session.session_id != data.get("session_id"):
            conn.send({"op": 9, "d": False})
            return
        self._take_over(session, conn)
        seq = data.get("seq") or 0
        for event in session.events:
            if event["s"] > seq and event["t"] not in ("READY", "RESUMED"):
                conn.send(event)
        self._dispatch("RESUMED", {"_trace": ["fake-discord"]})

    def _take_over(self, session: _Session, conn: _Connection) -> None:
        for other in list(self._connections):
            if other is not conn and other.session is not None and not other.closing:
                other.close(4000)  # a newer socket replaces it
        if self._session is not None and self._session is not session:
            self._session.conn = None
        self._session = session
        session.conn = conn
        conn.session = session

    def _guild_payload(self) -> Json:
        channels = [c for c in self.channels.values() if c["type"] in p.CHANNEL_KINDS.values()]
        threads = [c for c in self.channels.values() if c["type"] == p.PUBLIC_THREAD]
        members = [p.member(self.member_roles.get(BOT_USER["id"], []), user=BOT_USER)]
        return copy.deepcopy(p.guild(channels, threads, list(self.roles.values()), members))


def _wanted(intents: int, event: str, data: Json) -> bool:
    """Whether a session identified with ``intents`` receives ``event``."""
    if event in _GUILD_EVENTS:
        return bool(intents & INTENT_GUILDS)
    if event in _MESSAGE_EVENTS:
        flag = INTENT_GUILD_MESSAGES if "guild_id" in data else INTENT_DIRECT_MESSAGES
        return bool(intents & flag)
    return True


def _visible(intents: int, event: str, data: Json) -> Json:
    """Without MESSAGE_CONTENT, Discord blanks guild messages not addressed to the bot."""
    if event not in ("MESSAGE_CREATE", "MESSAGE_UPDATE") or intents & INTENT_MESSAGE_CONTENT:
        return data
    if "guild_id" not in data or data["author"]["id"] == BOT_USER["id"]:
        return data
    if any(user["id"] == BOT_USER["id"] for user in data.get("mentions", [])):
        return data
    return {**data, "content": "", "embeds": [], "attachments": [], "components": []}
