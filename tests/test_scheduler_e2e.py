"""The gateway's scheduler: its jobs, and the Curator check gated on idle time and interval."""

from __future__ import annotations

import json
from pathlib import Path

from core.clock import ManualClock
from tests.curator_helpers import DAY, HOUR, T0, add_skill, curator_of
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway


async def test_the_gateway_schedules_the_cron_look_and_the_curator_check(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("cron:\n  tick_seconds: 15\ncurator:\n  check_minutes: 30\n")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        jobs = {job.id: job for job in gw.gateway.scheduler.jobs()}
        assert gw.gateway.scheduler.running
    assert set(jobs) == {"cron", "curator", "audit-retention", "retention"}
    assert (jobs["cron"].every_seconds, jobs["curator"].every_seconds) == (15, 1800)
    assert all(job.next_run is not None for job in jobs.values())


async def test_the_curator_runs_only_after_an_interval_and_while_the_gateway_is_idle(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    skills = home / "skills"
    add_skill(skills, "old-agent-skill", idle_days=100, now=T0)
    add_skill(skills, "old-user-skill", idle_days=100, now=T0, created_by="user")
    clock = ManualClock(T0)
    async with running_gateway(home, fake_openai.gateway_env(), clock=clock) as gw:
        curator = curator_of(gw)
        assert await curator.check() is None  # the first check arms it: one interval to go
        clock.advance(167 * HOUR)
        assert await curator.check() is None
        clock.advance(2 * HOUR)
        await gw.say("hello")  # someone is chatting: not idle
        assert await curator.check() is None
        clock.advance(2 * HOUR + 1)
        report = await curator.check()
        assert report is not None
        clock.advance(DAY)
        assert await curator.check() is None  # the next pass is an interval away again

    assert not (skills / "old-agent-skill").exists()
    assert (skills / ".archive" / "old-agent-skill" / "SKILL.md").exists()
    assert (skills / "old-user-skill" / "SKILL.md").exists()  # a person's skill is never curated
    usage = json.loads((skills / ".usage.json").read_text())
    assert usage["old-agent-skill"]["state"] == "archived"
    assert usage["old-user-skill"]["state"] == "active"
    assert list((skills / ".curator_backups").glob("*/skills.tar.gz"))
