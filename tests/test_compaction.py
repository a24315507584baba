"""Where compaction cuts a transcript, and when it is due."""

from __future__ import annotations

from core.compaction import CompactionSettings, estimated_tokens, is_due, plan
from core.models.base import ChatMessage
from core.store.records import StoredMessage


def stored(*roles: str) -> list[StoredMessage]:
    return [StoredMessage(id=i, role=r, content=f"{r} {i}") for i, r in enumerate(roles)]


def test_the_recent_part_starts_at_a_user_message() -> None:
    transcript = stored("user", "assistant", "user", "assistant", "tool", "assistant")
    cut = plan(transcript, keep_recent=2)
    assert cut is not None
    assert [m.id for m in cut.recent] == [2, 3, 4, 5]  # no tool result is orphaned
    assert [m.id for m in cut.older] == [0, 1]


def test_nothing_to_compact_when_everything_is_recent() -> None:
    assert plan(stored("user", "assistant"), keep_recent=10) is None
    assert plan(stored("user", "assistant", "tool"), keep_recent=1) is None


def test_due_when_the_estimate_passes_the_threshold() -> None:
    settings = CompactionSettings(context_window=1_000, threshold=0.5)
    short = [ChatMessage(role="user", content="x" * 100)]
    long = [ChatMessage(role="user", content="x" * 2_400)]
    assert estimated_tokens("", long) > 500 > estimated_tokens("", short)
    assert not is_due(settings, "", short)
    assert is_due(settings, "", long)
