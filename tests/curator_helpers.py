"""Building blocks for curator tests: skills with telemetry, a migrated SessionDB, cron jobs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from core.curator.service import Curator
from core.messages import InboundMessage
from core.skills.usage import CreatedBy, SkillUsage
from core.store.db import SessionDB
from core.store.engine import create_engines
from core.store.tx import insert_sql
from gateway.features.curator import CuratorFeature
from migrations.runner import upgrade
from tests.gateway_server import RunningGateway

T0 = 1_780_000_000.0
DAY = 86_400.0
HOUR = 3_600.0


def curator_of(gw: RunningGateway) -> Curator:
    """The running gateway's Curator."""
    curator = gw.gateway.feature(CuratorFeature).curator
    assert curator is not None
    return curator


def when(at: float) -> datetime:
    return datetime.fromtimestamp(at, tz=UTC)


def skill_md(name: str, description: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description or 'Do ' + name}\n---\n# {name}\n"


def add_skill(
    skills: Path,
    name: str,
    *,
    created_by: CreatedBy | None = "agent",
    idle_days: float = 0.0,
    now: float = T0,
    category: str | None = None,
    description: str = "",
) -> Path:
    """A skill last active ``idle_days`` before ``now`` (no usage record when ``created_by``
    is None: it pre-dates the provenance marker)."""
    folder = skills / category / name if category else skills / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(skill_md(name, description), encoding="utf-8")
    if created_by is not None:
        SkillUsage(skills).record_created(name, created_by, when(now - idle_days * DAY))
    return folder


def usage(skills: Path) -> dict[str, dict[str, object]]:
    data: dict[str, dict[str, object]] = json.loads(
        (skills / ".usage.json").read_text(encoding="utf-8")
    )
    return data


@asynccontextmanager
async def migrated_db(path: Path) -> AsyncIterator[SessionDB]:
    url = f"sqlite:///{path}"
    engines = create_engines(url)
    try:
        await upgrade(engines.write)
    finally:
        await engines.dispose()
    async with SessionDB(url) as db:
        yield db


async def receive(db: SessionDB, at: float, number: int = 1, chat_id: str = "c1") -> None:
    """Someone wrote to the agent at ``at``."""
    msg = InboundMessage(
        platform="webhook",
        chat_id=chat_id,
        user_id="u1",
        text="hello",
        platform_message_id=f"m{number}",
        dedup_key=f"{chat_id}:m{number}:{at}",
        received_at=at,
    )
    await db.accept(msg, f"webhook:{chat_id}")


_CRON = (
    "id",
    "name",
    "prompt",
    "schedule",
    "skills",
    "deliver",
    "created_by",
    "created_at",
    "updated_at",
    "paused",
)


async def add_cron_job(db: SessionDB, job_id: str, skills: Sequence[str], *, paused: bool) -> None:
    row = {
        "id": job_id,
        "name": job_id,
        "prompt": "run it",
        "schedule": "every 1h",
        "skills": json.dumps(list(skills)),
        "deliver": "origin",
        "created_by": "user",
        "created_at": T0,
        "updated_at": T0,
        "paused": paused,
    }
    await db.write(lambda tx: tx.execute(insert_sql("cron_jobs", _CRON), row))


def days(n: float) -> timedelta:
    return timedelta(days=n)
