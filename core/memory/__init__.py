"""Bounded declarative memory: MEMORY.md and USER.md, their threat scan and the `memory` tool."""
