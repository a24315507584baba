"""The Curator against a real SQLite SessionDB and skills folder, with a manual clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import select

from core.clock import ManualClock
from core.curator.backup import SkillBackups
from core.curator.policy import CuratorPolicy
from core.curator.service import Curator
from core.curator.transitions import archive_skill, restore_skill
from core.errors import TransitionError
from core.skills.manage import apply_operations
from core.skills.store import SkillStore
from core.skills.usage import SkillUsage
from core.store.db import SessionDB
from core.store.engine import create_engines
from core.store.schema import curator_runs
from migrations.runner import upgrade
from tests.curator_helpers import (
    DAY,
    HOUR,
    T0,
    add_cron_job,
    add_skill,
    migrated_db,
    receive,
    usage,
    when,
)
from tests.direct_sql import DirectSql
from tests.postgres import postgres_database
from tests.test_store import migrate

INTERVAL = 168 * HOUR


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[SessionDB]:
    async with migrated_db(tmp_path / "state.db") as opened:
        yield opened


@pytest.fixture
async def tables(tmp_path: Path) -> AsyncIterator[DirectSql]:
    """The test's own look at the rows ``db`` holds, since ``db`` keeps its engines private."""
    async with DirectSql(f"sqlite:///{tmp_path / 'state.db'}") as sql:
        yield sql


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    path = tmp_path / "skills"
    path.mkdir()
    return path


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


def make(
    db: SessionDB,
    skills: Path,
    clock: ManualClock,
    *,
    store: SkillStore | None = None,
    **policy: object,
) -> Curator:
    return Curator(
        db,
        skills=store or SkillStore(skills),
        reports_dir=skills.parent / "curator" / "reports",
        policy=replace(CuratorPolicy(), **policy),  # type: ignore[arg-type]
        clock=clock,
    )


async def runs(tables: DirectSql) -> list[dict[str, object]]:
    rows = await tables.rows(select(curator_runs).order_by(curator_runs.c.id))
    return [dict(row._mapping) for row in rows]


# -- gates ------------------------------------------------------------------------------


async def test_first_run_is_deferred_one_full_interval_after_arming(
    db: SessionDB, skills: Path, clock: ManualClock
) -> None:
    add_skill(skills, "old", idle_days=40)
    curator = make(db, skills, clock)

    assert await curator.check() is None  # the first check only arms
    clock.advance(INTERVAL - 60)
    assert await curator.check() is None
    assert usage(skills)["old"]["state"] == "active"

    clock.advance(60)
    report = await curator.check()

    assert report is not None
    assert report.trigger == "schedule"
    assert [(t.name, t.after) for t in report.transitions] == [("old", "stale")]
    assert usage(skills)["old"]["state"] == "stale"


async def test_interval_counts_from_the_last_real_pass_not_dry_runs(
    db: SessionDB, tables: DirectSql, skills: Path, clock: ManualClock
) -> None:
    curator = make(db, skills, clock)
    await curator.run("manual")  # a real pass: the interval counts from here

    clock.advance(INTERVAL - 1)
    assert await curator.check() is None
    await curator.run("manual", dry_run=True)
    clock.advance(1)
    assert await curator.check() is not None
    clock.advance(HOUR)
    assert await curator.check() is None
    assert [r["trigger"] for r in await runs(tables)] == ["manual", "manual", "schedule"]


async def test_a_pass_waits_until_every_chat_has_been_idle_long_enough(
    db: SessionDB, skills: Path, clock: ManualClock
) -> None:
    curator = make(db, skills, clock)
    await curator.check()
    clock.advance(INTERVAL)
    await receive(db, clock.now() - 90 * 60, number=1, chat_id="c1")
    await receive(db, clock.now() - 30 * 60, number=2, chat_id="c2")  # the newest, any chat

    gate = await curator.gate()
    assert await curator.check() is None
    assert gate.reason == "not idle long enough"
    assert gate.next_due_at == clock.now() + 90 * 60

    clock.advance(89 * 60)
    assert await curator.check() is None
    clock.advance(60)
    assert await curator.check() is not None


async def test_disabled_or_paused_curator_never_runs(
    db: SessionDB, tables: DirectSql, skills: Path, clock: ManualClock
) -> None:
    disabled = make(db, skills, clock, enabled=False)
    assert await disabled.check() is None
    clock.advance(10 * INTERVAL)
    assert await disabled.check() is None
    assert await runs(tables) == []

    curator = make(db, skills, clock)
    await curator.check()  # arms now: the disabled time did not count
    clock.advance(INTERVAL)
    await curator.pause(True)
    assert await curator.check() is None
    assert (await curator.gate()).reason == "paused"
    await curator.pause(False)
    assert await curator.check() is not None


# -- transitions ------------------------------------------------------------------------


async def test_unused_managed_skills_go_stale_then_archived_and_come_back_when_used(
    db: SessionDB, skills: Path, clock: ManualClock
) -> None:
    add_skill(skills, "fresh", idle_days=20)
    add_skill(skills, "idle", idle_days=31)
    add_skill(skills, "forgotten", idle_days=91, category="ops")
    add_skill(skills, "mine", created_by="user", idle_days=400)
    add_skill(skills, "legacy", created_by=None, idle_days=400)
    curator = make(db, skills, clock)

    report = await curator.run("manual")

    assert {(t.name, t.before, t.after) for t in report.transitions} == {
        ("idle", "active", "stale"),
        ("forgotten", "active", "archived"),
    }
    assert (skills / ".archive" / "ops" / "forgotten" / "SKILL.md").is_file()
    assert not (skills / "ops" / "forgotten").exists()
    assert usage(skills)["forgotten"]["archived_at"] == when(T0).isoformat()
    assert (skills / "mine" / "SKILL.md").is_file()  # a person's skills are never touched
    assert (skills / "legacy" / "SKILL.md").is_file()
    assert set(report.unmanaged) == {"mine", "legacy"}

    SkillUsage(skills).record_use("idle", when(clock.now()))
    clock.advance(DAY)
    again = await curator.run("manual")

    assert [(t.name, t.after) for t in again.transitions] == [("idle", "active")]
    assert usage(skills)["idle"]["state"] == "active"


async def test_adopted_skills_keep_their_inactivity_clock(
    db: SessionDB, skills: Path, clock: ManualClock
) -> None:
    add_skill(skills, "notes", created_by="user", idle_days=45)
    SkillUsage(skills).adopt("notes")

    report = await make(db, skills, clock).run("manual")

    assert [(t.name, t.after) for t in report.transitions] == [("notes", "stale")]


async def test_pinned_and_cron_skills_are_never_touched(
    db: SessionDB, skills: Path, clock: ManualClock
) -> None:
    add_skill(skills, "pinned", idle_days=300)
    SkillUsage(skills).set_pinned("pinned", True)
    add_skill(skills, "nightly", idle_days=300)
    add_skill(skills, "weekly", idle_days=300, category="reports")
    add_skill(skills, "loose", idle_days=300)
    await add_cron_job(db, "job1", ["nightly"], paused=False)
    await add_cron_job(db, "job2", ["weekly", "gone"], paused=True)  # paused still protects

    report = await make(db, skills, clock).run("manual")

    assert [(t.name, t.after) for t in report.transitions] == [("loose", "archived")]
    assert set(report.protected) == {"pinned", "nightly", "weekly"}
    for folder in ("pinned", "nightly", "reports/weekly"):
        assert (skills / folder / "SKILL.md").is_file()
    assert "## Protected" in report.render()


async def test_archiving_and_restoring_refresh_the_skills_index(
    db: SessionDB, skills: Path, clock: ManualClock
) -> None:
    add_skill(skills, "forgotten", idle_days=100, description="Old procedure")
    store = SkillStore(skills)  # one store for the folder, as in one gateway process
    tools = ("skill_view",)
    assert "- forgotten: Old procedure" in store.index("webhook", tools)

    await make(db, skills, clock, store=store).run("manual")
    assert "forgotten" not in store.index("webhook", tools)

    clock.advance(DAY)
    restore_skill(store, "forgotten", when(clock.now()))
    assert "- forgotten: Old procedure" in store.index("webhook", tools)
    assert usage(skills)["forgotten"]["state"] == "active"
    clock.advance(DAY)
    report = await make(db, skills, clock).run("manual")
    assert report.transitions == ()  # a restored skill gets a fresh clock


def test_manual_archive_refuses_pinned_and_restore_refuses_a_clash(skills: Path) -> None:
    add_skill(skills, "keep")
    SkillUsage(skills).set_pinned("keep", True)
    add_skill(skills, "drop")

    store = SkillStore(skills)
    with pytest.raises(TransitionError, match="pinned"):
        archive_skill(store, "keep", when(T0))
    archive_skill(store, "drop", when(T0))
    add_skill(skills, "drop")  # a new skill took the name meanwhile
    with pytest.raises(TransitionError, match="already in the library"):
        restore_skill(store, "drop", when(T0))
    assert (skills / ".archive" / "drop" / "SKILL.md").is_file()


def test_skill_manage_refuses_to_delete_a_pinned_skill(skills: Path) -> None:
    add_skill(skills, "keep")
    SkillUsage(skills).set_pinned("keep", True)

    result = apply_operations(skills, [{"action": "delete", "name": "keep"}])

    assert result["success"] is False
    assert "pinned" in result["error"]
    assert (skills / "keep" / "SKILL.md").is_file()
    SkillUsage(skills).set_pinned("keep", False)
    assert apply_operations(skills, [{"action": "delete", "name": "keep"}])["success"] is True


# -- backups, dry runs, the run log ---------------------------------------------------


async def test_each_real_pass_snapshots_first_and_keeps_the_newest(
    db: SessionDB, skills: Path, clock: ManualClock
) -> None:
    add_skill(skills, "forgotten", idle_days=100)
    curator = make(db, skills, clock, keep_backups=2)

    first = await curator.run("manual")
    for _ in range(2):
        clock.advance(HOUR)
        await curator.run("manual")

    backups = SkillBackups(SkillStore(skills)).all()
    assert len(backups) == 2
    assert first.backup_id not in {b.id for b in backups}
    assert first.pruned_backups == ()
    assert first.counts["archived"] == 1


async def test_rollback_undoes_a_pass(db: SessionDB, skills: Path, clock: ManualClock) -> None:
    add_skill(skills, "forgotten", idle_days=100)
    report = await make(db, skills, clock).run("manual")
    assert report.backup_id is not None
    assert not (skills / "forgotten").exists()
    snapshot = SkillBackups(SkillStore(skills)).get(report.backup_id)
    assert "forgotten/SKILL.md" in {f.path for f in snapshot.files}  # taken before the pass

    SkillBackups(SkillStore(skills)).rollback(report.backup_id, clock.now() + 60)

    assert (skills / "forgotten" / "SKILL.md").is_file()
    assert usage(skills)["forgotten"]["state"] == "active"
    assert not (skills / ".archive" / "forgotten").exists()


async def test_a_rollback_brings_back_the_skills_index_of_its_snapshot(
    db: SessionDB, skills: Path, clock: ManualClock
) -> None:
    add_skill(skills, "forgotten", idle_days=100, description="Old procedure")
    store = SkillStore(skills)  # one store for the folder, as in one gateway process
    tools = ("skill_view",)
    report = await make(db, skills, clock, store=store).run("manual")
    assert report.backup_id is not None
    assert "forgotten" not in store.index("webhook", tools)

    SkillBackups(store).rollback(report.backup_id, clock.now() + 60)

    assert "- forgotten: Old procedure" in store.index("webhook", tools)


async def test_dry_run_changes_nothing_and_says_what_would_happen(
    db: SessionDB, tables: DirectSql, skills: Path, clock: ManualClock
) -> None:
    add_skill(skills, "idle", idle_days=31)
    add_skill(skills, "forgotten", idle_days=100)
    before = usage(skills)

    report = await make(db, skills, clock).run("manual", dry_run=True)

    assert {(t.name, t.after) for t in report.transitions} == {
        ("idle", "stale"),
        ("forgotten", "archived"),
    }
    assert usage(skills) == before
    assert (skills / "forgotten" / "SKILL.md").is_file()
    assert SkillBackups(SkillStore(skills)).all() == []
    text = (skills.parent / "curator" / "reports" / f"{report.run_id}.md").read_text("utf-8")
    assert "(dry run)" in text
    assert "- forgotten: would move active → archived (100d since last activity)" in text
    [row] = await runs(tables)
    assert row["dry_run"] is True
    assert row["status"] == "done"
    assert row["backup_id"] is None


async def test_each_pass_is_logged_with_counts_and_a_report(
    db: SessionDB, tables: DirectSql, skills: Path, clock: ManualClock
) -> None:
    add_skill(skills, "idle", idle_days=31)
    add_skill(skills, "mine", created_by="user")

    report = await make(db, skills, clock).run("manual")

    [row] = await runs(tables)
    assert row["status"] == "done"
    assert row["trigger"] == "manual"
    assert row["backup_id"] == report.backup_id
    assert row["counts"] == {
        "managed": 1,
        "stale": 1,
        "archived": 0,
        "reactivated": 0,
        "protected": 0,
        "unmanaged": 1,
        "absorbed": 0,
    }
    assert report.path is not None
    assert row["report"] == report.path.read_text("utf-8")
    assert "- idle: moved active → stale" in row["report"]
    assert "model: (not resolved)" in str(row["report"])


async def test_a_failed_pass_is_logged_as_failed(
    db: SessionDB,
    tables: DirectSql,
    skills: Path,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    add_skill(skills, "forgotten", idle_days=100)

    def broken(*_args: object) -> object:
        raise OSError("disk full")

    monkeypatch.setattr(SkillBackups, "snapshot", broken)
    with pytest.raises(OSError, match="disk full"):
        await make(db, skills, clock).run("manual")

    [row] = await runs(tables)
    assert row["status"] == "failed"
    assert row["error"] == "OSError: disk full"
    assert (skills / "forgotten" / "SKILL.md").is_file()  # no snapshot, no changes


async def test_status_counts_by_state_and_provenance(
    db: SessionDB, skills: Path, clock: ManualClock
) -> None:
    add_skill(skills, "busy", idle_days=1)
    for _ in range(3):
        SkillUsage(skills).record_use("busy", when(T0 - HOUR))
    add_skill(skills, "idle", idle_days=31)
    add_skill(skills, "forgotten", idle_days=100)
    add_skill(skills, "mine", created_by="user", idle_days=2)
    add_skill(skills, "adopted", created_by="user", idle_days=3)
    SkillUsage(skills).adopt("adopted")
    SkillUsage(skills).set_pinned("busy", True)
    add_skill(skills, "legacy", created_by=None)
    curator = make(db, skills, clock)
    await curator.run("manual")

    status = await curator.status()

    library = status.library
    assert library.states == {"active": 2, "stale": 1, "archived": 1}
    assert (library.agent_created, library.adopted) == (3, 1)
    assert (library.predates_marker, library.foreground_created) == (1, 1)
    assert library.pinned == ("busy",)
    assert library.most_active[0].name == "busy"
    assert library.least_active[0].name == "idle"
    assert status.runs == 1
    assert status.last_run is not None
    assert status.last_run.status == "done"


# -- the same SQL on PostgreSQL -------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
async def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionDB]:
    if request.param == "sqlite":
        async with migrated_db(tmp_path / "state.db") as opened:
            yield opened
        return
    async with postgres_database() as url:
        await migrate(url)
        async with SessionDB(url) as opened:
            yield opened


async def test_gates_runs_and_cron_protection_on_each_database(
    any_db: SessionDB, skills: Path, clock: ManualClock
) -> None:
    add_skill(skills, "nightly", idle_days=100)
    add_skill(skills, "loose", idle_days=100)
    await add_cron_job(any_db, "job1", ["nightly"], paused=True)
    curator = make(any_db, skills, clock)
    assert await curator.check() is None
    assert await curator.check() is None  # arming twice keeps the first time
    clock.advance(INTERVAL)
    await receive(any_db, clock.now() - HOUR)
    assert await curator.check() is None
    clock.advance(HOUR)
    await curator.pause(True)
    await curator.pause(False)

    report = await curator.check()

    assert report is not None
    assert [(t.name, t.after) for t in report.transitions] == [("loose", "archived")]
    status = await curator.status()
    assert (status.runs, status.dry_runs, status.paused) == (1, 0, False)
    assert status.last_run is not None
    assert status.last_run.counts["archived"] == 1


async def test_replicas_checking_at_once_run_one_pass(tmp_path: Path, clock: ManualClock) -> None:
    """Two gateways on one PostgreSQL database, each with its own skills folder."""
    async with postgres_database() as url:
        engines = create_engines(url)
        try:
            await upgrade(engines.write)
        finally:
            await engines.dispose()
        async with SessionDB(url) as first_db, SessionDB(url) as second_db:
            replicas = []
            for name, db in (("a", first_db), ("b", second_db)):
                folder = tmp_path / name / "skills"
                add_skill(folder, "old", idle_days=40)
                replicas.append(make(db, folder, clock))
            assert await replicas[0].check() is None  # arms the shared interval
            clock.advance(INTERVAL)

            reports = await asyncio.gather(*(r.check() for r in replicas))

            assert sum(report is not None for report in reports) == 1
            async with DirectSql(url) as tables:
                assert len(await runs(tables)) == 1
