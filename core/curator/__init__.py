"""The skills curator (issue 7): idle-gated retention for the skills the agent wrote itself.

``Curator`` runs the gates and the passes; ``SkillBackups`` snapshots and rolls back the
skills folder; ``transitions`` holds the deterministic stale/archive state machine and
``consolidate`` the opt-in model pass that merges near-duplicates.
"""
