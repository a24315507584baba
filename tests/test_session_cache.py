"""Transcripts in memory bounded by bytes (``sessions.cache_bytes``) and let go when a
chat goes quiet: a chat whose transcript was dropped still answers with its whole
history, read back from the SessionDB."""

from __future__ import annotations

from pathlib import Path

from core.models.base import ChatMessage
from core.session_cache import SessionCache
from core.session_state import SessionState
from core.store.records import SessionRow
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.test_metrics import scrape, value
from tests.test_webhook_e2e import until, wire_messages, write_config


def state(session_id: str, said: str = "") -> SessionState:
    row = SessionRow(
        id=session_id,
        session_key=f"webhook:{session_id}",
        platform="webhook",
        chat_id=session_id,
        started_at=0.0,
        last_active_at=0.0,
        provider="offline",
        model="offline",
        system_prompt="prompt",
    )
    return SessionState(row, [ChatMessage("user", said)] if said else [])


def test_the_least_recently_used_go_first_once_the_bytes_are_over_the_cap() -> None:
    one = state("a").weigh()
    cache = SessionCache(max_bytes=3 * one)
    for key in ("a", "b", "c"):
        cache.put(key, state(key))
    cache.use("a")  # now b is the oldest
    cache.put("d", state("d"))

    assert list(cache) == ["c", "a", "d"]
    assert cache.nbytes == 3 * one


def test_a_grown_transcript_is_weighed_again_and_pushes_others_out() -> None:
    cache = SessionCache(max_bytes=3 * state("a").weigh())
    for key in ("a", "b", "c"):
        cache.put(key, state(key))
    grown = cache.use("a")
    assert grown is not None
    grown.history.append(ChatMessage("user", "x" * 1000))
    cache.reweigh("a")

    assert list(cache) == ["a"]  # b and c went; a stays even alone over the cap
    assert cache.nbytes == grown.weigh()


def _history(request: dict[str, object]) -> list[tuple[str, str | None]]:
    return wire_messages(request)[1:]  # past the system prompt


async def test_a_chat_pushed_out_by_the_byte_cap_answers_with_its_whole_history(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, sessions={"cache_bytes": 1})  # room for the newest chat only
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello from a", chat_id="a")
        await gw.say("hello from b", chat_id="b")
        families = await scrape(gw)
        again = await gw.say("a again", chat_id="a")

    assert value(families["chatgate_cached_sessions"], "chatgate_cached_sessions") == 1
    assert value(families["chatgate_session_cache_bytes"], "chatgate_session_cache_bytes") > 0
    assert again.status_code == 200
    assert _history(fake_openai.requests[-1]) == [
        ("user", "hello from a"),
        ("assistant", "echo: hello from a"),
        ("user", "a again"),
    ]


async def test_a_quiet_chat_holds_no_transcript_and_answers_with_its_history(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, sessions={"idle_worker_seconds": 0.05})
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello", chat_id="quiet")
        sessions = gw.gateway.core.sessions
        await until(lambda: sessions.cached_count == 0)
        families = await scrape(gw)
        await gw.say("still there?", chat_id="quiet")

    assert value(families["chatgate_cached_sessions"], "chatgate_cached_sessions") == 0
    assert value(families["chatgate_session_cache_bytes"], "chatgate_session_cache_bytes") == 0
    first, second = fake_openai.requests
    assert second["messages"][0] == first["messages"][0]  # the same prompt, byte for byte
    assert _history(second) == [
        ("user", "hello"),
        ("assistant", "echo: hello"),
        ("user", "still there?"),
    ]
