"""A platform that lives only in the test suite: "testroom", one chat room over HTTP.

It is added the way a package outside chatgate adds one: ``adapters.registry.register``
(in-process) or an entry point in the ``chatgate.platforms`` group (a real ``chatgate
run``). It uses nothing but the public contract: ``PlatformSpec``, ``Section``, the
``Adapter`` protocol, the ``Inbox`` and the ``DeliveryLedger``.

- ``POST /testroom/say`` with ``{"text": ...}`` says it in the room as the configured
  speaker and answers once the turn's replies have been sent;
- ``GET /testroom/sent`` lists what the gateway sent to the room, in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from adapters.base import Adapter
from adapters.platform import PlatformServices, PlatformSpec, Section
from core.inbox import Inbox
from core.ledger import DeliveryLedger
from core.messages import InboundMessage, OutboundMessage
from core.store.records import Accepted
from core.streaming import Previews

NAME = "testroom"
PROMPT_HINT = "You are in the test room; answer in one line."
STARTER_CONFIG = """\
testroom:
  room: lobby              # the room's chat id
  speaker: guest           # who speaks there [TESTROOM_SPEAKER]
"""


class RoomSettings(Section):
    enabled: bool = True
    room: str = "lobby"
    speaker: str = "guest"


@dataclass
class RoomAdapter:
    settings: RoomSettings
    services: PlatformServices
    sent: list[OutboundMessage] = field(default_factory=list)
    name: str = NAME
    push: bool = True
    # Replies arrive whole.
    previews: Previews | None = None
    # A test sets this to see /readyz name the platform.
    broken: bool = False
    _inbox: Inbox | None = None
    _said: int = 0

    @property
    def healthy(self) -> bool:
        return self._inbox is not None and not self.broken

    def install(self, app: FastAPI) -> None:
        app.add_api_route("/testroom/say", self._post_say, methods=["POST"])
        app.add_api_route("/testroom/sent", self._get_sent, methods=["GET"])

    async def start(self, inbox: Inbox, ledger: DeliveryLedger) -> None:
        self._inbox = inbox

    async def stop(self) -> None:
        self._inbox = None

    async def send(self, msg: OutboundMessage) -> str | None:
        self.sent.append(msg)
        return f"room-message-{len(self.sent)}"

    async def say(self, text: str) -> None:
        """Say ``text`` in the room and wait until its replies were sent."""
        assert self._inbox is not None, "not started"
        self._said += 1
        msg = InboundMessage(
            platform=NAME,
            chat_id=self.settings.room,
            user_id=self.settings.speaker,
            text=text,
            platform_message_id=str(self._said),
            dedup_key=f"{self.settings.room}:{self.services.now()}:{self._said}",
            received_at=self.services.now(),
        )
        admission = await self._inbox.accept(msg)
        assert isinstance(admission, Accepted), admission
        await self._inbox.replies(admission.item)

    async def _post_say(self, request: Request) -> JSONResponse:
        body = await request.json()
        await self.say(str(body["text"]))
        return JSONResponse({"said": body["text"]})

    async def _get_sent(self) -> JSONResponse:
        return JSONResponse([{"chat_id": m.chat_id, "text": m.text} for m in self.sent])


def build(settings: RoomSettings, services: PlatformServices) -> Adapter:
    return RoomAdapter(settings, services)


SPEC = PlatformSpec(
    name=NAME,
    settings=RoomSettings,
    build=build,
    enabled=lambda settings: settings.enabled,
    env={"TESTROOM_SPEAKER": "speaker"},
    prompt_hint=PROMPT_HINT,
    mounts_routes=True,
    starter_config=STARTER_CONFIG,
)
