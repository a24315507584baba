"""The skills curator: an idle-gated pass that stales, archives and (opt-in) merges skills.

The gateway calls ``check()`` every ``check_minutes``; it runs a pass only when the
curator is enabled and not paused, the last real pass is ``interval_hours`` old and
nobody has written to the agent in any chat for ``min_idle_hours``. A fresh install is
armed by its first check and waits one full interval before its first pass. Every pass
snapshots the skills folder first, records a ``curator_runs`` row and writes a report.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

import core.curator.transitions as transitions
from core.clock import Clock
from core.curator.backup import SkillBackups
from core.curator.consolidate import ConsolidationResult, Consolidator
from core.curator.policy import CuratorPolicy
from core.curator.report import RunReport
from core.curator.status import LibraryCounts, library_counts
from core.errors import CuratorBusy
from core.models.base import ModelClient
from core.record import record
from core.skills.store import SkillStore
from core.skills.usage import SkillUsage
from core.store.curator import CuratorRun
from core.store.db import SessionDB

log = logging.getLogger(__name__)
TRIGGERS = ("schedule", "manual")


@record
class Gate:
    """Whether a scheduled pass is due now, why not, and when it next could be."""

    due: bool
    reason: str
    next_due_at: float | None = None


@record
class CuratorStatus:
    """Everything ``chatgate curator status`` prints."""

    policy: CuratorPolicy
    paused: bool
    gate: Gate
    runs: int
    dry_runs: int
    last_run: CuratorRun | None
    last_activity: float | None
    library: LibraryCounts


class Curator:
    """The curator of one skills store, recording into one SessionDB."""

    def __init__(
        self,
        db: SessionDB,
        *,
        skills: SkillStore,
        reports_dir: Path,
        policy: CuratorPolicy,
        clock: Clock,
        model: ModelClient | None = None,
    ) -> None:
        """``model`` is only needed for consolidation; without it that phase is skipped.

        ``skills`` must be the store the gateway's skill tools use, so the moves a pass
        makes show in the next session's index.
        """
        self.db = db
        self.skills_dir = skills.skills_dir
        self._skills = skills
        self.reports_dir = reports_dir
        self.policy = policy
        self.clock = clock
        self.model = model
        self.backups = SkillBackups(skills)

    async def check(self) -> RunReport | None:
        """Run a scheduled pass if every gate is open; None when the gates kept it shut."""
        gate = await self.gate(arm=True)
        if not gate.due:
            log.debug("curator: no pass: %s", gate.reason)
            return None
        now = self.clock.now()
        since = now - self.policy.interval_hours * 3600
        if not await self.db.curator.claim_pass(now, since):
            log.info("curator: another replica claimed this pass")
            return None
        try:
            return await self.run("schedule")
        except CuratorBusy:
            log.info("curator: a pass is already running; skipping this check")
            return None

    async def gate(self, *, arm: bool = False) -> Gate:
        """Evaluate the gates; with ``arm``, the first call starts the first interval."""
        now = self.clock.now()
        if not self.policy.enabled:
            return Gate(False, "disabled")
        readings = await self.db.curator.gate_readings()
        armed, last, active_at = readings.armed_at, readings.last_real_run, readings.last_activity
        if readings.paused:
            return Gate(False, "paused")
        if last is None and armed is None:
            if not arm:
                return Gate(False, "not armed yet (the first check arms it)")
            armed = await self.db.curator.arm(now)
        since = last.started_at if last is not None else float(armed or now)
        due_at = since + self.policy.interval_seconds
        if active_at is not None:
            due_at = max(due_at, active_at + self.policy.min_idle_seconds)
        if now < since + self.policy.interval_seconds:
            what = "last pass" if last is not None else "arming (first run is deferred)"
            return Gate(False, f"interval not reached since the {what}", due_at)
        if active_at is not None and now < active_at + self.policy.min_idle_seconds:
            return Gate(False, "not idle long enough", due_at)
        return Gate(True, "due", due_at)

    async def run(
        self, trigger: str = "manual", *, dry_run: bool = False, consolidate: bool | None = None
    ) -> RunReport:
        """One pass now, gates aside; raises ``CuratorBusy`` if another is running."""
        if trigger not in TRIGGERS:
            raise ValueError(f"trigger must be one of {TRIGGERS}")
        merge = self.policy.consolidate if consolidate is None else consolidate
        lock = self._lock()
        try:
            lock.acquire()
        except Timeout:
            raise CuratorBusy("another curator pass is running") from None
        try:
            return await self._recorded_pass(trigger, dry_run, merge)
        finally:
            lock.release()

    async def status(self) -> CuratorStatus:
        """The gates (without arming), the run log and the library's counts."""
        gate = await self.gate()
        run_log = await self.db.curator.run_log()
        records = await asyncio.to_thread(SkillUsage(self.skills_dir).all)
        counts = await asyncio.to_thread(library_counts, self.skills_dir, records)
        return CuratorStatus(
            self.policy,
            run_log.paused,
            gate,
            run_log.runs,
            run_log.dry_runs,
            run_log.last_run,
            run_log.last_activity,
            counts,
        )

    async def pause(self, paused: bool) -> None:
        await self.db.curator.set_paused(paused, self.clock.now())

    def _lock(self) -> FileLock:
        return pass_lock(self.skills_dir)

    async def _recorded_pass(self, trigger: str, dry_run: bool, merge: bool) -> RunReport:
        started = self.clock.now()
        run_id = await self.db.curator.start_run(started, trigger, dry_run, merge)
        try:
            report = await self._pass(run_id, trigger, started, dry_run, merge)
        except (Exception, asyncio.CancelledError) as exc:
            # A stop mid-pass is recorded too, so no run is left "running" for ever.
            error = f"{exc.__class__.__name__}: {exc}" if str(exc) else "stopped mid-pass"
            finished = self.clock.now()
            await asyncio.shield(
                self.db.curator.finish_run(
                    run_id,
                    at=finished,
                    status="failed",
                    backup_id=None,
                    counts={},
                    report="",
                    error=error,
                )
            )
            raise
        text = report.render()
        finished = self.clock.now()
        await self.db.curator.finish_run(
            run_id,
            at=finished,
            status="done",
            backup_id=report.backup_id,
            counts=report.counts,
            report=text,
        )
        return report

    async def _pass(
        self, run_id: int, trigger: str, started: float, dry_run: bool, merge: bool
    ) -> RunReport:
        cron_skills = await self.db.curator.cron_skill_names()
        now = datetime.fromtimestamp(started, tz=UTC)
        records = await asyncio.to_thread(SkillUsage(self.skills_dir).all)
        skills = await asyncio.to_thread(transitions.live_skills, self.skills_dir, records)
        plan = transitions.plan(skills, now, self.policy.thresholds, cron_skills)
        backup_id: str | None = None
        pruned: list[str] = []
        moved = list(plan.transitions)
        if not dry_run:
            backup = await asyncio.to_thread(
                self.backups.snapshot, f"curator run {run_id} ({trigger})", started
            )
            backup_id = backup.id
            pruned = await asyncio.to_thread(self.backups.prune, self.policy.keep_backups)
            moved = await asyncio.to_thread(transitions.apply, self._skills, moved, now)
        consolidation, note = await self._consolidate(merge, dry_run, skills, moved, cron_skills)
        report = RunReport(
            run_id=run_id,
            trigger=trigger,
            dry_run=dry_run,
            started_at=started,
            policy=self.policy,
            transitions=tuple(moved),
            protected=plan.protected,
            unmanaged=plan.unmanaged,
            managed=len(skills) - len(plan.unmanaged),
            backup_id=backup_id,
            pruned_backups=tuple(pruned),
            consolidation=consolidation,
            consolidation_note=note,
        )
        path = await asyncio.to_thread(report.write, self.reports_dir)
        return replace(report, path=path)

    async def _consolidate(
        self,
        merge: bool,
        dry_run: bool,
        skills: list[transitions.LiveSkill],
        moved: list[transitions.Transition],
        cron_skills: set[str],
    ) -> tuple[ConsolidationResult | None, str]:
        if not merge:
            return None, ""
        if dry_run:
            return None, "Skipped: a dry run never calls the model."
        if self.model is None or self.model.provider == "offline":
            return None, "Skipped: no model is configured."
        archived = {t.name for t in moved if t.after == "archived"}
        remaining = [s for s in skills if s.name not in archived]
        protected = cron_skills | {s.name for s in remaining if s.record.pinned}
        consolidator = Consolidator(
            self.model,
            self._skills,
            self.clock,
            max_iterations=self.policy.consolidate_max_iterations,
        )
        return await consolidator.run(remaining, protected), ""


def pass_lock(skills_dir: Path) -> FileLock:
    """The lock a Curator pass (and a rollback) holds on this skills folder; never waits."""
    folder = skills_dir / ".locks"
    folder.mkdir(parents=True, exist_ok=True)
    return FileLock(folder / "curator.lock", timeout=0)
