"""The text of ``/status``: the chat's session, its prompt tiers, the model."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from core.models.base import ModelClient
from core.store.records import SessionRow

OFFLINE_HINT = (
    "No model is configured; set OPENAI_BASE_URL, OPENAI_API_KEY and "
    "CHATGATE_MODEL (or ANTHROPIC_API_KEY) and restart."
)


def session_lines(row: SessionRow | None) -> list[str]:
    if row is None:
        return ["Session: none yet (your next message starts one)"]
    started = datetime.fromtimestamp(row.started_at, tz=UTC)
    tiers = row.prompt_tiers or {}
    return [
        f"Session: {row.id}",
        f"Started: {started:%Y-%m-%d %H:%M} UTC",
        f"Turns: {row.turn_count} (messages: {row.message_count})",
        "Prompt: " + ", ".join(f"{k} {v} B" for k, v in tiers.items()),
    ]


def model_lines(model: ModelClient) -> list[str]:
    lines = [f"Model: {model.model} (provider: {model.provider})"]
    if model.provider == "offline":
        lines.append(OFFLINE_HINT)
    return lines


def render(parts: Sequence[list[str]]) -> str:
    return "\n".join(line for part in parts for line in part)
