"""The terminal: ``chatgate chat`` talks to the agent through it (``adapter``).

Never started by ``chatgate run``; ``chatgate chat --chat-id`` picks the conversation.
"""

from __future__ import annotations

import sys

from adapters.base import Adapter
from adapters.platform import PlatformServices, PlatformSpec, Section

PROMPT_HINT = (
    "You are talking in a terminal. Plain text and light markdown render well; keep "
    "lines short and avoid wide tables."
)

STARTER_CONFIG = """\
terminal:                  # chatgate chat
  chat_id: local           # the conversation chatgate chat continues (--chat-id)
"""


class TerminalSettings(Section):
    # Which terminal conversation ``chatgate chat`` continues (``--chat-id``).
    chat_id: str = "local"


def build(settings: TerminalSettings, services: PlatformServices) -> Adapter:
    # Imported here: settings are read by every CLI command, the terminal runs in one.
    from rich.console import Console
    from rich.markup import escape

    from adapters.terminal.adapter import TerminalAdapter, read_line
    from adapters.terminal.line_editor import editing_reader

    console = Console()
    on_terminal = sys.stdin.isatty() and sys.stdout.isatty()
    reader = editing_reader(services.home) if on_terminal else read_line

    def show(text: str) -> None:
        # The reply is model (or echoed user) text: never let it be read as markup.
        console.print(f"[bold cyan]agent>[/] {escape(text)}", highlight=False)

    return TerminalAdapter(
        chat_id=settings.chat_id,
        printer=show,
        reader=reader,
        on_end=services.request_stop,
        media=services.media,
    )


SPEC = PlatformSpec(
    name="terminal",
    settings=TerminalSettings,
    build=build,
    enabled=lambda _settings: False,
    prompt_hint=PROMPT_HINT,
    starter_config=STARTER_CONFIG,
    interactive="chat_id",
    trusted_users=True,
)
