"""Files: the ``send_file`` tool sends a file from the home's ``outbox/`` folder to the
chat with the turn's reply (``core.files``).

Each platform delivers it its own way (a photo or a document, an attachment, a link the
webhook serves); the reply goes through the outbox, so a file is sent once, after a
restart too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pydantic import Field

from adapters.platform import Section
from core.files.folder import OutboxFolder
from core.files.tool import SendFileTool
from core.media.store import MediaStore
from gateway.features.base import Contribution, FeatureContext, FeatureSpec
from gateway.settings import Settings

# The largest upload a chat platform takes from a bot (larger ones are sent as a note).
DEFAULT_MAX_BYTES = 50_000_000

GUIDANCE = (
    "To send the person a file (a report, an image, an export), save it in the outbox "
    "folder, {folder}, and call `send_file` with its path there. It goes out with your "
    "reply, after the text: images as photos, other files as documents. Only files in "
    "that folder can be sent; say in your reply what the file is."
)

STARTER_CONFIG = """\
files:
  enabled: true            # the send_file tool: files from <home>/outbox/ sent to the chat
  max_bytes: 50000000      # larger files are refused (50 MB: the most a chat platform takes)
"""


class FilesSettings(Section):
    """The ``send_file`` tool."""

    enabled: bool = True
    # The largest file send_file sends (bytes); larger ones are refused with a reason.
    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1, le=2_000_000_000)


class Files:
    def __init__(self, settings: Settings) -> None:
        self._folder = OutboxFolder(
            settings.home / "outbox", max_bytes=settings.section(FilesSettings).max_bytes
        )
        self._media = MediaStore(settings.media_dir)

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        self._folder.ensure()
        tool = SendFileTool(self._folder, self._media)
        guidance = GUIDANCE.format(folder=self._folder.root)
        yield Contribution(tools=[tool], guidance={tool.spec.name: guidance})


def build(settings: Settings) -> Files | None:
    return Files(settings) if settings.section(FilesSettings).enabled else None


SPEC = FeatureSpec("files", build, settings=FilesSettings, starter_config=STARTER_CONFIG)
