"""The text of ``chatgate curator status``, laid out like the curator's own status page."""

from __future__ import annotations

from rich.console import Console

from core.curator.service import CuratorStatus
from core.curator.status import SkillActivity, age, utc


def print_status(console: Console, status: CuratorStatus, *, backups: int, now: float) -> None:
    policy = status.policy
    state = "ENABLED" if policy.enabled else "DISABLED"
    lines = [f"curator: {state}{' (paused)' if status.paused else ''}"]
    lines += [
        f"  runs:           {status.runs}" + _dry(status.dry_runs),
        f"  last run:       {_last_run(status, now)}",
        f"  next run:       {_next_run(status, now)}",
        f"  interval:       every {_hours(policy.interval_hours)}",
        f"  idle needed:    {_hours(policy.min_idle_hours)} without messages",
        f"  stale after:    {policy.stale_after_days:g}d unused",
        f"  archive after:  {policy.archive_after_days:g}d unused",
        "  consolidate:    "
        + (
            "on (LLM merge pass)"
            if policy.consolidate
            else "off (prune-only; LLM merge pass opt-in)"
        ),
        f"  backups:        {backups} kept (at most {policy.keep_backups})",
        "",
    ]
    library = status.library
    lines += [
        f"curator-managed skills: {library.managed} total  "
        f"(agent-created={library.agent_created}  adopted={library.adopted})",
        *(
            f"  {name:<10} {library.states.get(name, 0)}"
            for name in ("active", "stale", "archived")
        ),
        "",
        f"unmanaged (no provenance marker): {library.unmanaged} total",
        f"  pre-dates marker    {library.predates_marker}",
        f"  foreground-created  {library.foreground_created}",
        "",
        f"pinned: {', '.join(library.pinned) if library.pinned else 'none'}",
        "least active:" + _activity(library.least_active, now),
        "most active:" + _activity(library.most_active, now),
    ]
    console.print("\n".join(lines), markup=False)


def _dry(count: int) -> str:
    return f"  (+{count} dry run{'s' if count != 1 else ''})" if count else ""


def _last_run(status: CuratorStatus, now: float) -> str:
    run = status.last_run
    if run is None:
        return "never"
    kind = f"{run.trigger}{', dry run' if run.dry_run else ''}"
    return f"{age(utc(run.started_at), now)} (#{run.id} {run.status}, {kind})"


def _next_run(status: CuratorStatus, now: float) -> str:
    gate = status.gate
    if gate.due:
        return "due at the next check"
    if gate.next_due_at is None:
        return gate.reason
    wait = max(gate.next_due_at - now, 0)
    return f"in {_duration(wait)} ({gate.reason})"


def _hours(hours: float) -> str:
    if hours >= 24 and hours % 24 == 0:
        return f"{hours / 24:g}d"
    return f"{hours:g}h"


def _duration(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86_400)
    hours, rest = divmod(rest, 3_600)
    if days:
        return f"{days}d {hours}h"
    return f"{hours}h {rest // 60}m"


def _activity(skills: tuple[SkillActivity, ...], now: float) -> str:
    if not skills:
        return " none"
    width = max(len(s.name) for s in skills)
    return "".join(
        f"\n  {s.name:<{width}}  last {age(s.last_activity, now):<10} "
        f"({s.uses} uses, {s.views} views, {s.patches} patches)"
        for s in skills
    )
