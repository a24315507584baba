"""The skills tree is written only through real folders: no symbolic link on the way.

A link anywhere below the skills root (a skill folder, a category, ``references/``, the
file itself) could point outside ``CHATGATE_HOME``, and comparing resolved paths cannot
see it once the link is the skill folder itself: both sides resolve through it. So each
component is checked with ``lstat`` from the root down, before anything is resolved. The
root itself may be a link: that is where the operator chose to keep the skills.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from core.errors import SkillRefused


def refuse_links(skills_dir: Path, path: Path) -> Path:
    """Return ``path`` when no component of it below ``skills_dir`` is a symbolic link."""
    try:
        parts = path.relative_to(skills_dir).parts
    except ValueError:
        raise SkillRefused("path_outside", f"{path} is not inside the skills folder") from None
    current = skills_dir
    for part in parts:
        current = current / part
        if _is_link(current):
            relative = current.relative_to(skills_dir).as_posix()
            raise SkillRefused(
                "path_symlink",
                f"{relative!r} is a symbolic link; skill writes never follow links",
            )
    return path


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False
