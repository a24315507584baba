"""The gateway's features, in the order they contribute (tools, commands, hooks).

Adding a feature is one module here and one entry in ``FEATURES``; see
``gateway.features.base`` for the protocol and ``docs/architecture.md`` for the steps.
"""

from __future__ import annotations

from gateway.features import (
    audit,
    compaction,
    cron,
    curator,
    documents,
    files,
    mcp,
    memory,
    memory_provider,
    people,
    retention,
    review,
    search,
    skills,
    stt,
    tts,
)
from gateway.features.base import FeatureSpec

FEATURES: tuple[FeatureSpec, ...] = (
    memory.SPEC,
    memory_provider.SPEC,
    search.SPEC,
    skills.SPEC,
    compaction.SPEC,
    review.SPEC,
    curator.SPEC,
    cron.SPEC,
    stt.SPEC,
    documents.SPEC,
    tts.SPEC,
    files.SPEC,
    people.SPEC,
    retention.SPEC,
    audit.SPEC,
    # Last: its tools join once every built-in tool is known, so a clash names them.
    mcp.SPEC,
)
