"""A memory provider only the test suite knows, installed through the entry-point group.

It writes every hook call it receives as one JSON line to ``<home>/recorder.jsonl``, so a
test driving the real gateway reads back what reached the provider and in what order.
Options: ``recall`` (text returned by prefetch), ``recall_chars`` (return that many
characters instead, starting ``RECALL-HEAD`` and ending ``RECALL-TAIL``), ``keep``
(what ``on_pre_compress`` asks the summary to keep), ``fail`` (every optional hook raises).
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from core.memory.provider import ENTRY_POINT_GROUP
from core.models.base import ToolSpec

NAME = "recorder"
HEAD, TAIL = "RECALL-HEAD", "RECALL-TAIL"


def big_recall(chars: int) -> str:
    middle = chars - len(HEAD) - len(TAIL) - 2
    return f"{HEAD} " + "m" * middle + f" {TAIL}"


class Recorder:
    def __init__(self, options: Mapping[str, Any], home: Path) -> None:
        self.options = dict(options)
        self.log = home / "recorder.jsonl"

    def _record(self, hook: str, **fields: Any) -> None:
        with self.log.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"hook": hook, **fields}) + "\n")

    def _maybe_fail(self, hook: str) -> None:
        if self.options.get("fail"):
            raise RuntimeError(f"{hook} is broken in this backend")

    @property
    def name(self) -> str:
        return NAME

    def is_available(self) -> bool:
        return True

    async def initialize(self, session_id: str, *, platform: str, user_id: str) -> None:
        self._record("initialize", session_id=session_id)

    def system_prompt_block(self) -> str:
        return ""

    async def prefetch(self, query: str, *, session_id: str) -> str:
        self._record("prefetch", query=query, session_id=session_id)
        chars = self.options.get("recall_chars")
        return big_recall(chars) if chars else str(self.options.get("recall", ""))

    async def sync_turn(self, user_text: str, assistant_text: str, *, session_id: str) -> None:
        return None

    async def on_session_end(self, session_id: str) -> None:
        self._record("on_session_end", session_id=session_id)

    def get_tool_schemas(self) -> list[ToolSpec]:
        return []

    async def handle_tool_call(self, name: str, args: dict[str, Any], *, session_id: str) -> str:
        return "{}"

    async def on_turn_start(
        self,
        turn_number: int,
        message: str,
        *,
        session_id: str,
        platform: str,
        chat_id: str,
        user_id: str,
    ) -> None:
        self._record(
            "on_turn_start",
            turn_number=turn_number,
            message=message,
            session_id=session_id,
            platform=platform,
            chat_id=chat_id,
            user_id=user_id,
        )
        self._maybe_fail("on_turn_start")

    async def on_pre_compress(
        self, messages: Sequence[Mapping[str, Any]], *, session_id: str
    ) -> str:
        self._record("on_pre_compress", messages=list(messages), session_id=session_id)
        self._maybe_fail("on_pre_compress")
        return str(self.options.get("keep", ""))

    async def on_memory_write(
        self, *, target: str, action: str, content: str, session_id: str
    ) -> None:
        self._record(
            "on_memory_write", target=target, action=action, content=content, session_id=session_id
        )
        self._maybe_fail("on_memory_write")


def recorded(home: Path, hook: str | None = None) -> list[dict[str, Any]]:
    """The hook calls the recorder saw, oldest first (only ``hook``'s when given)."""
    path = home / "recorder.jsonl"
    if not path.exists():
        return []
    calls = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [c for c in calls if hook is None or c["hook"] == hook]


def install(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Declare ``recorder`` in ``chatgate.memory_providers`` from a distribution on sys.path."""
    dist = site / "chatgate_recorder-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: chatgate-recorder\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        textwrap.dedent(f"""\
            [{ENTRY_POINT_GROUP}]
            {NAME} = tests.recorder_provider:Recorder
            """)
    )
    monkeypatch.syspath_prepend(str(site))
    assert "tests.recorder_provider" in sys.modules
