"""Chat commands, handled in the core before the model, the same on every platform.

A command is a registry entry; adapters (slash commands, a platform's command menu)
generate their own lists from ``CommandRegistry.all()`` (``Inbox.command_menu``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Collection
from typing import NamedTuple, Protocol

from core.messages import InboundMessage
from core.record import record
from core.store.records import InboxItem

# What a person types as a command: ``/word`` or ``/word@botname``, then a space or the
# end. ``/usr/bin is...`` is no command token: it reaches the model.
_COMMAND_TOKEN = re.compile(r"/([a-z0-9_]+)(?:@\S+)?(?:\s|$)", re.IGNORECASE)
UNKNOWN_COMMAND = "unknown command, see /help"


def command_token(text: str) -> str | None:
    """The ``/word`` ``text`` starts with (lower case, no ``@botname``), or None."""
    match = _COMMAND_TOKEN.match(text.strip())
    return match.group(1).lower() if match else None


@record
class CommandReply:
    """What a command answers, and whether it ended the chat's session."""

    text: str
    end_session_reason: str | None = None


class CommandHost(Protocol):
    """What command handlers may ask of the core."""

    def is_owner(self, message: InboundMessage) -> bool:
        """Whether the sender owns the bot (``<platform>.owners``; at the terminal, yes)."""
        ...

    async def describe_status(self, item: InboxItem) -> str: ...

    async def compact_session(self, item: InboxItem) -> str: ...

    def command_help(self) -> str: ...


CommandHandler = Callable[[CommandHost, InboxItem, str], Awaitable[CommandReply]]


def may_approve(host: CommandHost, message: InboundMessage, approvers: Collection[str]) -> bool:
    """Whether the sender may approve staged writes: one of ``approvers``
    (``platform:user_id``) when any are named, else one of the bot's owners."""
    if approvers:
        return f"{message.platform}:{message.user_id}" in approvers
    return host.is_owner(message)


@record
class Command:
    name: str
    summary: str
    handler: CommandHandler
    aliases: tuple[str, ...] = ()
    # Acted on as it arrives, not queued behind the chat's running turn (``/approve``
    # must reach the turn that waits for it; ``core.ingress``).
    immediate: bool = False


class Invocation(NamedTuple):
    """A chat command found in a message, and the text after its name."""

    command: Command
    args: str


class CommandRegistry:
    """Commands by name and alias."""

    def __init__(self) -> None:
        self._commands: list[Command] = []
        self._by_name: dict[str, Command] = {}

    def register(self, command: Command) -> None:
        for name in (command.name, *command.aliases):
            if name in self._by_name:
                raise ValueError(f"command /{name} is already registered")
            self._by_name[name] = command
        self._commands.append(command)

    def all(self) -> list[Command]:
        return list(self._commands)

    def parse(self, text: str) -> Invocation | None:
        """The command ``text`` invokes and its argument text, or None for a plain message.

        ``/cmd@botname`` is accepted; an unknown ``/word`` is no invocation here (a
        skill may claim it; otherwise the turn answers ``UNKNOWN_COMMAND``), and paths
        like ``/etc/hosts`` still reach the model.
        """
        stripped = text.strip()
        if not stripped.startswith("/"):
            return None
        head, _, rest = stripped[1:].partition(" ")
        name = head.split("@", 1)[0].lower()
        command = self._by_name.get(name)
        return Invocation(command, rest.strip()) if command is not None else None

    def help_text(self) -> str:
        lines = ["Commands:"]
        for c in self._commands:
            names = " ".join(f"/{n}" for n in (c.name, *c.aliases))
            lines.append(f"{names} - {c.summary}")
        return "\n".join(lines)


async def _new(host: CommandHost, item: InboxItem, args: str) -> CommandReply:
    return CommandReply(
        "Started a new session. Earlier messages stay searchable but are no longer in context.",
        end_session_reason="new",
    )


async def _status(host: CommandHost, item: InboxItem, args: str) -> CommandReply:
    return CommandReply(await host.describe_status(item))


async def _compact(host: CommandHost, item: InboxItem, args: str) -> CommandReply:
    return CommandReply(await host.compact_session(item))


async def _help(host: CommandHost, item: InboxItem, args: str) -> CommandReply:
    return CommandReply(host.command_help())


async def _stop_when_idle(host: CommandHost, item: InboxItem, args: str) -> CommandReply:
    # /stop is acted on as it arrives (see core.ingress); reaching the queue
    # means it was recovered after a restart, when nothing can be running.
    return CommandReply("Nothing is running.")


STOP = "stop"


def builtin_commands() -> CommandRegistry:
    registry = CommandRegistry()
    registry.register(Command("new", "end this session and start a fresh one", _new, ("reset",)))
    # Read-only, and wanted most while a turn is slow or waits for an approval.
    registry.register(
        Command("status", "session, model and usage of this chat", _status, immediate=True)
    )
    registry.register(Command(STOP, "cancel the reply being worked on", _stop_when_idle))
    registry.register(
        Command("compact", "summarise older messages now to free the model's context", _compact)
    )
    # /start: what some chat apps send when someone first opens a bot.
    registry.register(Command("help", "list the commands", _help, ("start",)))
    return registry
