"""Server-Sent Events on the webhook, end to end: an httpx streaming client against the
running gateway, the real openai client and the fake model streaming slowly."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from adapters.webhook.settings import WebhookSettings
from adapters.webhook.streaming import EventStreams, wants_events
from core.errors import ConfigError, StoreUnavailable
from core.messages import InboundMessage
from core.store.records import InboxItem
from core.store.schema import outbox
from gateway.config import load_settings
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway
from tests.test_webhook_e2e import rows, texts, write_config
from tests.test_webhook_security import signed_headers

Json = dict[str, Any]
EVENTS = {"Accept": "text/event-stream"}
# Forty words, each a delta; at 20 ms a word the answer takes most of a second to stream.
ANSWER = " ".join(f"word{i}" for i in range(40)) + "."
TOKEN_SECONDS = 0.02


@dataclass(frozen=True, slots=True)
class Event:
    kind: str
    data: Json


async def events_of(response: httpx.Response) -> AsyncIterator[Event]:
    """The events of a ``text/event-stream`` response, as they arrive (comments skipped)."""
    kind, data = "message", []
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            kind = line[len("event: ") :]
        elif line.startswith("data: "):
            data.append(line[len("data: ") :])
        elif not line and data:
            yield Event(kind, json.loads("\n".join(data)))
            kind, data = "message", []


@asynccontextmanager
async def streamed(gw: RunningGateway, text: str, **extra: object) -> AsyncIterator[httpx.Response]:
    body = {"chat_id": "c1", "user_id": "u1", "text": text, **extra}
    async with gw.client.stream("POST", "/webhook/demo", json=body, headers=EVENTS) as response:
        yield response


async def all_events(gw: RunningGateway, text: str, **extra: object) -> list[Event]:
    async with streamed(gw, text, **extra) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return [event async for event in events_of(response)]


def deltas(events: list[Event]) -> str:
    return "".join(e.data["text"] for e in events if e.kind == "delta")


async def test_deltas_arrive_as_generated_then_one_done_with_the_usual_body(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.token_seconds = TOKEN_SECONDS
    fake_openai.reply_text(ANSWER)
    received: list[Event] = []
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        async with streamed(gw, "tell me a long story", message_id="m1") as response:
            async for event in events_of(response):
                if not received:  # the first delta: the reply is not stored yet
                    stored_at_first_delta = await rows(gw, outbox.select())
                received.append(event)
        waited = await gw.say("and now without events")

    kinds = [e.kind for e in received]
    assert kinds[0] == "delta"
    assert stored_at_first_delta == []
    assert kinds.count("done") == 1
    assert kinds[-1] == "done"
    assert kinds.count("delta") > 10  # piece by piece, not the whole at the end
    done = received[-1].data
    assert deltas(received) == ANSWER
    assert done["replies"] == [{"text": ANSWER}]
    assert done["message_id"] == "m1"
    assert done["session_id"] == waited.json()["session_id"]  # the same chat's session
    assert set(done) == set(waited.json())  # the body a waiting POST answers


async def test_a_tool_call_mid_stream_is_one_progress_event_then_the_answer(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.reply_tool_call("session_search", {"query": "tea"}, text="Let me look. ")
    fake_openai.reply_text("You like green tea.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        events = await all_events(gw, "what tea do I like?")

    assert [e.kind for e in events if e.kind != "delta"] == ["tool", "done"]
    tool_at = next(i for i, e in enumerate(events) if e.kind == "tool")
    assert events[tool_at].data == {"text": "searching past sessions…"}
    assert deltas(events[:tool_at]) == "Let me look. "
    assert deltas(events[tool_at:]) == "You like green tea."
    # The reply is the model's last answer; the words before the call were a preview.
    assert events[-1].data["replies"] == [{"text": "You like green tea."}]


async def test_a_redelivery_gets_the_first_turns_done_and_the_model_is_asked_once(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.reply_text("Only once.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        first = await all_events(gw, "hello", message_id="same")
        again = await all_events(gw, "hello", message_id="same")

    assert deltas(first) == "Only once."
    assert [e.kind for e in again] == ["done"]
    assert again[0].data == first[-1].data
    assert len(fake_openai.requests) == 1


async def test_a_client_that_goes_away_mid_stream_loses_nothing(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.token_seconds = TOKEN_SECONDS
    fake_openai.reply_text(ANSWER)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        async with streamed(gw, "a long story please") as response:
            async for event in events_of(response):
                assert event.kind == "delta"
                break  # and hang up, a few words into the answer
        async with asyncio.timeout(10):
            await gw.gateway.core.until_idle("webhook:c1")
        pulled = await gw.client.get("/webhook/demo/chats/c1/replies")
        again = await gw.say("are you still there?")

    assert [r["text"] for r in pulled.json()["replies"]] == [ANSWER]  # stored whole
    assert texts(again) == ["echo: are you still there?"]


async def test_a_signed_request_streams_and_a_bad_signature_is_a_json_401(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    secret = "stream-secret"
    fake_openai.reply_text("Signed and streamed.")
    env = {**fake_openai.gateway_env(), "CHATGATE_WEBHOOK_SECRET": secret}
    body = json.dumps({"chat_id": "c1", "user_id": "u1", "text": "hi"}).encode()
    async with running_gateway(home, env) as gw:
        headers = {**signed_headers(secret, body), **EVENTS}
        async with gw.client.stream("POST", "/webhook/demo", content=body, headers=headers) as ok:
            events = [event async for event in events_of(ok)]
        refused = await gw.client.post(
            "/webhook/demo", content=body, headers={**signed_headers("wrong", body), **EVENTS}
        )

    assert deltas(events) == "Signed and streamed."
    assert events[-1].data["replies"] == [{"text": "Signed and streamed."}]
    assert refused.status_code == 401
    assert refused.headers["content-type"] == "application/json"
    assert "signature" in refused.json()["error"]


@pytest.mark.parametrize(
    "sections",
    [{"webhook": {"streaming": "off"}}, {"streaming": {"enabled": False}}],
    ids=["webhook.streaming-off", "streaming.enabled-false"],
)
async def test_with_streaming_off_the_stream_carries_only_done(
    home: Path, fake_openai: FakeOpenAIServer, sections: Json
) -> None:
    write_config(home, **sections)
    fake_openai.reply_text("All at once.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        events = await all_events(gw, "hello")

    assert [e.kind for e in events] == ["done"]
    assert events[0].data["replies"] == [{"text": "All at once."}]


async def test_wait_false_still_answers_202_and_a_refusal_is_json(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        queued = await gw.client.post(
            "/webhook/demo?wait=false",
            json={"chat_id": "c1", "user_id": "u1", "text": "later", "message_id": "q1"},
            headers=EVENTS,
        )
        bad = await gw.client.post(
            "/webhook/demo", json={"chat_id": "c1", "user_id": "u1"}, headers=EVENTS
        )
        schema = (await gw.client.get("/openapi.json")).json()

    assert queued.status_code == 202
    assert queued.json() == {"message_id": "q1", "status": "queued"}
    assert bad.status_code == 422
    assert bad.json()["field"] == "text"
    answers = schema["paths"]["/webhook/{route}"]["post"]["responses"]["200"]["content"]
    assert {"application/json", "text/event-stream"} <= set(answers)


@pytest.mark.parametrize(
    ("accept", "streams"),
    [
        ("text/event-stream", True),
        ("Text/Event-Stream; charset=utf-8", True),
        ("application/json, text/event-stream", True),  # either will do: events
        ("application/json, text/event-stream;q=0.5", False),
        ("text/event-stream;q=0", False),
        ("application/json", False),
        ("*/*", False),
        (None, False),
    ],
)
def test_events_are_sent_when_the_accept_header_prefers_them(
    accept: str | None, streams: bool
) -> None:
    headers = [] if accept is None else [(b"accept", accept.encode())]
    request = Request({"type": "http", "headers": headers})
    assert wants_events(request) is streams


def test_streaming_off_as_written_in_yaml_and_a_bad_value(home: Path) -> None:
    # YAML 1.1 reads a bare ``off`` as false: it still means off.
    (home / "config.yaml").write_text("webhook:\n  streaming: off\n", encoding="utf-8")
    section = load_settings(home, {}).platform("webhook")
    assert isinstance(section, WebhookSettings)
    assert section.streaming == "off"
    (home / "config.yaml").write_text("webhook:\n  streaming: sometimes\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="webhook.streaming"):
        load_settings(home, {})


async def test_a_stream_whose_replies_cannot_be_read_still_ends_with_one_done() -> None:
    # The seam the adapter streams through: its wait for the turn fails (the SessionDB
    # is down while a redelivery's replies are read); the client must not wait forever.
    message = InboundMessage(
        platform="webhook",
        chat_id="c1",
        user_id="u1",
        text="hi",
        platform_message_id="m9",
        dedup_key="key",
        received_at=0.0,
    )
    item = InboxItem(id=1, session_key="webhook:c1", message=message)
    delivered: list[object] = []
    streams = EventStreams(delivered.extend)

    async def accept() -> InboxItem:
        return item

    async def done(_: InboxItem) -> None:
        raise StoreUnavailable("the database is not answering")

    response = await streams.stream("key", accept, done)
    async with asyncio.timeout(10):  # without a done the stream would only ping, forever
        body = b"".join([chunk async for chunk in response.body_iterator])  # type: ignore[misc]
    await streams.close()

    assert body == b'event: done\ndata: {"message_id":"m9","status":"queued"}\n\n'
    assert delivered == []
