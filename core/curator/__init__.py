"""The skills curator (issue 7): idle-gated retention for the skills the agent wrote itself.

``Curator`` runs the gates and the passes; ``SkillBackups`` snapshots and rolls back the
skills folder; ``transitions`` holds the deterministic stale/archive state machine and
``consolidate`` the opt-in model pass that merges near-duplicates.
"""

from core.curator.backup import Backup, SkillBackups
from core.curator.policy import CuratorPolicy
from core.curator.report import RunReport
from core.curator.service import Curator, CuratorStatus, Gate

__all__ = [
    "Backup",
    "Curator",
    "CuratorPolicy",
    "CuratorStatus",
    "Gate",
    "RunReport",
    "SkillBackups",
]
