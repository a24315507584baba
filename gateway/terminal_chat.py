"""``chatgate chat``: a terminal conversation on the same core and SessionDB."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from adapters.terminal import TerminalAdapter, read_line
from gateway.config import Settings
from gateway.runtime import open_gateway

PROMPT = "you> "


async def run_terminal_chat(settings: Settings, chat_id: str) -> None:
    console = Console()

    def show(text: str) -> None:
        # The reply is model (or echoed user) text: never let it be read as markup.
        console.print(f"[bold cyan]agent>[/] {escape(text)}", highlight=False)

    terminal = TerminalAdapter(chat_id=chat_id, printer=show)
    async with open_gateway(settings, [terminal]) as gateway:
        model = gateway.model
        console.print(
            f"chatgate chat: model {model.model} ({model.provider}). "
            "Type /help for commands, Ctrl-D to leave.",
            style="dim",
        )
        while (line := await read_line(PROMPT)) is not None:
            if line.strip():
                await terminal.say(line)
