"""The prompt a cron run sends: attached skills loaded at run time, then the job's prompt.

Skills are read when the job runs, not when it is made, so a job follows the skill as it
is today. That makes the skill text a way in for injected instructions that the create-time
scan of the prompt never saw, and a cron run approves its own tool calls; so the whole
assembled text is scanned before the run, and nothing runs if it is flagged.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from core.errors import CronError, PromptRefused
from core.memory.threats import scan
from core.record import record
from core.skills.library import SKILL_FILE, skill_folders, split_frontmatter
from core.skills.manage import find_skill
from core.skills.usage import SkillUsage

# For the system prompt of a cron run's fresh session (the executor adds it): the run has
# no one to ask, its answer is the delivered output, and [SILENT] is how to send nothing.
CRON_RUN_GUIDANCE = (
    "You are running a scheduled task; no one is watching and no one can answer questions, "
    "so do the task with what you have. Your final answer is delivered as the task's output. "
    "When there is nothing worth reporting, start your answer with [SILENT] and nothing is "
    "sent."
)


@record
class LoadedSkill:
    name: str
    body: str


def installed_skills(skills_dir: Path) -> list[str]:
    """The names a job may attach: every skill folder holding a SKILL.md."""
    return sorted({folder.name for folder, _ in skill_folders(skills_dir)})


def check_skill_names(skills_dir: Path, names: Sequence[str]) -> list[str]:
    """The names, de-duplicated in order; ``CronError`` names any unknown skill."""
    available = installed_skills(skills_dir)
    unique = list(dict.fromkeys(name.strip() for name in names if name.strip()))
    unknown = [name for name in unique if name not in available]
    if unknown:
        listed = ", ".join(available) if available else "none are installed"
        raise CronError(f"Unknown skill(s): {', '.join(unknown)}. Available: {listed}.")
    return unique


def skill_block(skill: LoadedSkill) -> str:
    """One attached skill in the seed's invocation wrapper, so the model treats it as the
    user having invoked the skill (the same obligation as ``/<skill-name>``)."""
    return (
        f'[IMPORTANT: The user has invoked the "{skill.name}" skill, indicating they want you '
        "to follow its instructions. The full skill content is loaded below.]\n\n"
        + skill.body.strip()
    )


def assemble(prompt: str, skills: Sequence[LoadedSkill]) -> str:
    blocks = [skill_block(skill) for skill in skills]
    if blocks:
        blocks.append("[The scheduled task itself:]\n\n" + prompt.strip())
        return "\n\n".join(blocks)
    return prompt.strip()


def load_skills(skills_dir: Path, names: Sequence[str]) -> list[LoadedSkill]:
    """Read each attached SKILL.md; a skill that is gone refuses the run by name."""
    loaded = []
    for name in names:
        folder = find_skill(skills_dir, name) if name in installed_skills(skills_dir) else None
        if folder is None:
            raise PromptRefused(f'the attached skill "{name}" is not installed any more')
        try:
            text = (folder / SKILL_FILE).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise PromptRefused(f'the attached skill "{name}" cannot be read: {exc}') from exc
        _, body = split_frontmatter(text, [])
        loaded.append(LoadedSkill(name, body))
    return loaded


def build_run_prompt(skills_dir: Path, prompt: str, skills: Sequence[str], at: datetime) -> str:
    """Load, assemble and scan; count each skill's use only when the run goes ahead.

    Blocking file work: call it off the event loop.
    """
    loaded = load_skills(skills_dir, skills)
    text = assemble(prompt, loaded)
    threat = scan(text)
    if threat is not None:
        raise PromptRefused(f"the assembled prompt was flagged by the threat scan ({threat})")
    usage = SkillUsage(skills_dir)
    for skill in loaded:
        usage.record_use(skill.name, at)
    return text
