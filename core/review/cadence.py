"""When a session is due a background review, counted from its stored transcript.

Two counters per session: user turns since the model last called ``memory``, and tool
iterations (assistant messages that call tools) since it last called ``skill_manage``.
Both are derived from the transcript plus the position of the last review of each kind,
so a restart loses nothing: the counts come back from the SessionDB.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.models.base import ChatMessage
from core.record import record

MEMORY = "memory"
SKILLS = "skills"
MEMORY_TOOL = "memory"
SKILL_MANAGE_TOOL = "skill_manage"


@record
class Intervals:
    """Turns between memory reviews and tool iterations between skill reviews (0: off)."""

    memory: int = 10
    skills: int = 10


@dataclass(slots=True)
class Counters:
    turns_since_memory: int = 0
    iterations_since_skills: int = 0

    def observe(self, messages: Iterable[ChatMessage]) -> None:
        """Advance over messages appended to the transcript, oldest first."""
        for message in messages:
            if message.role == "user":
                self.turns_since_memory += 1
            elif message.role == "assistant" and message.tool_calls:
                self.iterations_since_skills += 1
                names = {call.name for call in message.tool_calls}
                if MEMORY_TOOL in names:
                    self.turns_since_memory = 0
                if SKILL_MANAGE_TOOL in names:
                    self.iterations_since_skills = 0

    def due(self, intervals: Intervals) -> tuple[str, ...]:
        """The review kinds this session is due, in a fixed order."""
        kinds = []
        if intervals.memory and self.turns_since_memory >= intervals.memory:
            kinds.append(MEMORY)
        if intervals.skills and self.iterations_since_skills >= intervals.skills:
            kinds.append(SKILLS)
        return tuple(kinds)

    def reset(self, kinds: Iterable[str]) -> None:
        for kind in kinds:
            if kind == MEMORY:
                self.turns_since_memory = 0
            elif kind == SKILLS:
                self.iterations_since_skills = 0

    def left(self, intervals: Intervals) -> tuple[int | None, int | None]:
        """Turns until a memory review and iterations until a skill review (None: off)."""
        memory = max(intervals.memory - self.turns_since_memory, 0) if intervals.memory else None
        skills = (
            max(intervals.skills - self.iterations_since_skills, 0) if intervals.skills else None
        )
        return memory, skills


def derive(history: Sequence[ChatMessage], marks: dict[str, int]) -> Counters:
    """Counters for ``history`` given where the last review of each kind was scheduled.

    ``marks`` maps a kind to the transcript length when its last review was scheduled;
    whatever came before that position was already reviewed.
    """
    counters = Counters()
    memory_mark, skills_mark = marks.get(MEMORY, 0), marks.get(SKILLS, 0)
    for position, message in enumerate(history):
        if position == memory_mark:
            counters.turns_since_memory = 0
        if position == skills_mark:
            counters.iterations_since_skills = 0
        counters.observe((message,))
    if memory_mark >= len(history):
        counters.turns_since_memory = 0
    if skills_mark >= len(history):
        counters.iterations_since_skills = 0
    return counters


def kinds_text(kinds: Iterable[str]) -> str:
    return ",".join(kinds)


def parse_kinds(text: str) -> tuple[str, ...]:
    return tuple(k for k in text.split(",") if k in (MEMORY, SKILLS))
