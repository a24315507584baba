"""The provider's optional hooks and its recall ceiling, through the whole gateway.

The provider is ``tests/recorder_provider.py``, installed through the entry-point group
like a third-party package; the fake model server sees what the model would.
"""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from core.compaction import NOTES_HEADING
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.recorder_provider import HEAD, TAIL, install, recorded


@pytest.fixture(autouse=True)
def recorder_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(tmp_path / "site", monkeypatch)


def configure(home: Path, options: str = "{}", memory: str = "") -> None:
    config = f"memory:\n  provider: recorder\n  provider_options: {options}\n{memory}"
    (home / "config.yaml").write_text(config, encoding="utf-8")


def sent_user_text(fake_openai: FakeOpenAIServer, request: int) -> str:
    content: str = fake_openai.requests[request]["messages"][-1]["content"]
    return content


async def test_each_turn_start_reaches_the_provider_with_its_context(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        first = await gw.say("hello there", chat_id="c7", user_id="ada")
        await gw.say("and again", chat_id="c7", user_id="ada")

    session_id = first.json()["session_id"]
    starts = recorded(home, "on_turn_start")
    assert starts == [
        {
            "hook": "on_turn_start",
            "turn_number": number,
            "message": text,
            "session_id": session_id,
            "platform": "webhook",
            "chat_id": "c7",
            "user_id": "ada",
        }
        for number, text in [(1, "hello there"), (2, "and again")]
    ]
    hooks = [c["hook"] for c in recorded(home) if c["hook"] in ("on_turn_start", "prefetch")]
    assert hooks == ["on_turn_start", "prefetch", "on_turn_start", "prefetch"]


async def test_a_memory_write_is_mirrored_to_the_provider(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    fake_openai.reply_tool_call(
        "memory", {"target": "user", "action": "add", "content": "Has a cat called Miso"}
    )
    fake_openai.reply_text("Noted.")
    fake_openai.reply_tool_call(
        "memory",
        {"target": "user", "action": "patch", "old_text": "Miso", "content": "Miso (a tabby)"},
    )
    fake_openai.reply_text("Noted too.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        first = await gw.say("remember my cat is Miso")
        await gw.say("she is a tabby")

    writes = [
        (c["target"], c["action"], c["content"], c["session_id"])
        for c in recorded(home, "on_memory_write")
    ]
    session_id = first.json()["session_id"]
    assert writes == [
        ("user", "add", "Has a cat called Miso", session_id),
        ("user", "patch", "Has a cat called Miso (a tabby)", session_id),
    ]


async def test_a_refused_memory_write_is_not_mirrored(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    fake_openai.reply_tool_call("memory", {"target": "user", "action": "remove", "old_text": "x"})
    fake_openai.reply_text("Nothing to remove.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("forget x")

    assert recorded(home, "on_memory_write") == []


async def test_the_providers_notes_go_into_the_summary_input(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home, "{keep: 'The user prefers metric units.'}")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        first = await gw.say("the code word is heliotrope")
        await gw.say("and the backup word is quince")
        fake_openai.reply_text("Code word heliotrope; backup word quince.")
        compacted = await gw.say("/compact")

    assert compacted.json()["session_id"] != first.json()["session_id"]
    [pre] = recorded(home, "on_pre_compress")
    assert pre["session_id"] == first.json()["session_id"]
    assert pre["messages"][0] == {"role": "user", "content": "the code word is heliotrope"}
    summary_input = fake_openai.requests[2]["messages"][1]["content"]
    assert "heliotrope" in summary_input
    assert summary_input.endswith(f"{NOTES_HEADING}\n\nThe user prefers metric units.")
    # The hook ran before the summary was asked for and before the session ended.
    hooks = [c["hook"] for c in recorded(home)]
    assert hooks.index("on_pre_compress") < hooks.index("on_session_end")


async def test_failing_hooks_are_logged_and_never_break_the_turn(
    home: Path, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    configure(home, "{fail: true}")
    fake_openai.reply_tool_call(
        "memory", {"target": "memory", "action": "add", "content": "Deploys on Fridays"}
    )
    fake_openai.reply_text("Saved.")
    with caplog.at_level(logging.WARNING):
        async with running_gateway(home, fake_openai.gateway_env()) as gw:
            saved = await gw.say("note that we deploy on Fridays")
            await gw.say("second message")
            fake_openai.reply_text("A summary.")
            compacted = await gw.say("/compact")

    assert [r["text"] for r in saved.json()["replies"]] == ["Saved."]
    assert "Deploys on Fridays" in (home / "memories" / "MEMORY.md").read_text(encoding="utf-8")
    assert compacted.status_code == 200
    assert NOTES_HEADING not in fake_openai.requests[-2]["messages"][1]["content"]
    failures = {r.getMessage() for r in caplog.records if r.name == "core.memory.provider"}
    assert failures == {
        "memory provider recorder: on_turn_start failed",
        "memory provider recorder: on_memory_write failed",
        "memory provider recorder: on_pre_compress failed",
    }
    assert not any("Fridays" in r.getMessage() for r in caplog.records)  # no body in a log line


async def test_recall_over_the_ceiling_is_cut_with_a_marker(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home, "{recall_chars: 150000}")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("tell me everything")

    sent = sent_user_text(fake_openai, 0)
    assert sent.startswith("tell me everything\n\n<memory-context>")
    assert HEAD in sent
    assert TAIL not in sent
    assert "[Recall cut: " in sent
    assert "memory.prefetch_max_chars" in sent
    recall = sent.split("<memory-context>", 1)[1]
    assert 99_000 < len(recall) < 100_000 + 500  # the limit, plus the fence's own lines
    assert not (home / "spill").exists()


async def test_recall_over_the_ceiling_is_spilled_to_a_private_file(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home, "{recall_chars: 150000}", "  prefetch_spill_enabled: true\n")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("tell me everything")

    [spilled] = list((home / "spill" / "recall").iterdir())
    assert len(spilled.read_text(encoding="utf-8")) == 150_000
    assert stat.S_IMODE(spilled.stat().st_mode) == 0o600
    assert stat.S_IMODE(spilled.parent.stat().st_mode) == 0o700
    sent = sent_user_text(fake_openai, 0)
    assert str(spilled) in sent
    assert HEAD in sent
    assert TAIL in sent
    assert len(sent) < 10_000


async def test_a_lower_ceiling_applies_to_smaller_recall(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home, "{recall_chars: 5000}", "  prefetch_max_chars: 2000\n")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("tell me")

    sent = sent_user_text(fake_openai, 0)
    assert "[Recall cut: 3,000 of 5,000 characters left out" in sent
    assert TAIL not in sent


async def test_a_staged_write_is_mirrored_when_it_is_approved(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home, memory="  write_approval: true\nwebhook:\n  owners: [u1]\n")
    fake_openai.reply_tool_call(
        "memory", {"target": "memory", "action": "add", "content": "Deploys on Fridays"}
    )
    fake_openai.reply_text("Staged.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("note that we deploy on Fridays")
        assert recorded(home, "on_memory_write") == []  # staged is not written
        await gw.say("/memory approve all")

    [write] = recorded(home, "on_memory_write")
    assert (write["target"], write["action"], write["content"]) == (
        "memory",
        "add",
        "Deploys on Fridays",
    )
    assert write["session_id"] == ""  # a staged write does not record its session
