"""What ``/status`` says about the background review of a session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from core.review.service import ReviewService
from core.store.records import SessionRow


def status_line(memory: int | None, skills: int | None) -> str:
    parts = []
    if memory is not None:
        parts.append(f"memory review {_when(memory, 'turn')}")
    if skills is not None:
        parts.append(f"skill review {_when(skills, 'tool step')}")
    if not parts:
        return "Background review: off."
    return "Background review: " + ", ".join(parts) + "."


def _when(left: int, unit: str) -> str:
    if left <= 0:
        return "due after this turn"
    return f"in {left} {unit}{'' if left == 1 else 's'}"


def review_status(service: ReviewService) -> Callable[[SessionRow], Awaitable[list[str]]]:
    async def lines(row: SessionRow) -> list[str]:
        return [status_line(*await service.left(row))]

    return lines
