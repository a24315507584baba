"""Skills: procedural memory stored as SKILL.md folders."""
