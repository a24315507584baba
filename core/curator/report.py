"""The readable report every curator pass writes to ``curator/reports/<run id>.md``."""

from __future__ import annotations

from dataclasses import field
from datetime import UTC, datetime
from pathlib import Path

from core.curator.consolidate import ConsolidationResult
from core.curator.policy import CuratorPolicy
from core.curator.transitions import Transition
from core.memory.store import write_atomically
from core.record import record


@record
class RunReport:
    """What one pass did (or, in a dry run, would do)."""

    run_id: int
    trigger: str
    dry_run: bool
    started_at: float
    policy: CuratorPolicy
    transitions: tuple[Transition, ...]
    protected: tuple[str, ...]
    unmanaged: tuple[str, ...]
    managed: int
    backup_id: str | None = None
    pruned_backups: tuple[str, ...] = ()
    consolidation: ConsolidationResult | None = None
    consolidation_note: str = ""
    path: Path | None = field(default=None, compare=False)

    def moved_to(self, state: str) -> list[Transition]:
        return [t for t in self.transitions if t.after == state]

    @property
    def counts(self) -> dict[str, int]:
        absorbed = len(self.consolidation.absorbed) if self.consolidation else 0
        return {
            "managed": self.managed,
            "stale": len(self.moved_to("stale")),
            "archived": len(self.moved_to("archived")),
            "reactivated": len(self.moved_to("active")),
            "protected": len(self.protected),
            "unmanaged": len(self.unmanaged),
            "absorbed": absorbed,
        }

    def render(self) -> str:
        verb = "would move" if self.dry_run else "moved"
        lines = [
            f"# Curator run {self.run_id}{' (dry run)' if self.dry_run else ''}",
            "",
            f"- started: {_when(self.started_at)} ({self.trigger})",
            f"- thresholds: stale after {self.policy.stale_after_days:g}d unused, "
            f"archive after {self.policy.archive_after_days:g}d unused",
            f"- backup: {self.backup_id or ('none (dry run)' if self.dry_run else 'none')}",
            f"- model: {self._model_line()}",
            f"- curator-managed skills: {self.managed}; unmanaged (never touched): "
            f"{len(self.unmanaged)}",
            "",
            "## Transitions",
            "",
        ]
        if not self.transitions:
            lines.append("No skill changed state.")
        for transition in self.transitions:
            lines.append(
                f"- {transition.name}: {verb} {transition.before} → {transition.after} "
                f"({transition.idle_days:.0f}d since last activity)"
            )
        if self.protected:
            lines += ["", "## Protected (pinned or used by a cron job)", ""]
            lines += [f"- {name}" for name in self.protected]
        lines += self._consolidation_lines()
        return "\n".join(lines) + "\n"

    def _model_line(self) -> str:
        if self.consolidation is None or self.consolidation.model is None:
            return "(not resolved)"
        return self.consolidation.model

    def _consolidation_lines(self) -> list[str]:
        if self.consolidation is None and not self.consolidation_note:
            return []
        lines = ["", "## Consolidation", ""]
        if self.consolidation_note:
            lines.append(self.consolidation_note)
        if self.consolidation is not None:
            result = self.consolidation
            lines += [f"- {name} absorbed into {into}" for name, into in result.absorbed]
            lines += [f"- wrote {name}" for name in result.written]
            if result.refusals:
                lines.append(f"- refused {len(result.refusals)} write(s) outside its jurisdiction")
            if result.summary:
                lines += ["", result.summary.strip()]
        return lines

    def write(self, reports_dir: Path) -> Path:
        reports_dir.mkdir(parents=True, exist_ok=True)
        path = reports_dir / f"{self.run_id}.md"
        write_atomically(path, self.render())
        return path


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
