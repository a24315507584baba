"""Search: the ``session_search`` tool over every stored conversation (no model call).

Each chat reads its own past by default; ``scope="all"`` only where the owner allowed it
(``search.allow_global``) or for the people named in ``search.owners``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pydantic import Field

from adapters.platform import Section
from core.search.tool import SessionSearchTool
from gateway.features.base import Contribution, FeatureContext, FeatureSpec
from gateway.settings import Settings

GUIDANCE = (
    "Past conversations are stored and searchable with `session_search`. When the user "
    "refers to something from an earlier conversation, search before guessing."
)

STARTER_CONFIG = """\
search:
  enabled: true            # the session_search tool over past conversations
  allow_global: false      # let scope="all" search every chat (single-owner deployments only)
  owners: []               # who may use scope="all" anyway, e.g. ["webhook:alice"]
"""


class SearchSettings(Section):
    enabled: bool = True
    # session_search scope="all" reaches every chat: only for a single-owner deployment.
    allow_global: bool = False
    # "platform:user_id" of the deployment's owners, who may use scope="all" anyway.
    owners: list[str] = Field(default_factory=list)


class Search:
    def __init__(self, settings: SearchSettings) -> None:
        self._settings = settings

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        s = self._settings
        tool = SessionSearchTool(ctx.db.search, allow_global=s.allow_global, owners=s.owners)
        yield Contribution(tools=[tool], guidance={"session_search": GUIDANCE})


def build(settings: Settings) -> Search | None:
    s = settings.section(SearchSettings)
    return Search(s) if s.enabled else None


SPEC = FeatureSpec("search", build, settings=SearchSettings, starter_config=STARTER_CONFIG)
