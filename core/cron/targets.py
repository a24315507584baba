"""Where a cron job's output goes, written as text in the job's ``deliver`` column.

``origin`` is the chat that created the job; ``<platform>[/<route>]:<chat_id>[:<thread_id>]``
names a chat (webhook chats live under a route: ``webhook/myroute:chat-1``); ``file:<path>``
appends to a local file. Relative file paths live under ``$CHATGATE_HOME/cron/output/``,
and the model may only name those: an absolute path or ``..`` could overwrite any file the
gateway can write.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

from core.errors import TargetError
from core.messages import ChatTarget
from core.record import record

ORIGIN = "origin"
FILE_PREFIX = "file:"
FORMS = "'origin', '<platform>[/<route>]:<chat_id>[:<thread_id>]' or 'file:<path>'"


@record
class Origin:
    """The chat that created the job."""


@record
class FileTarget:
    """A local file; ``path`` as written (relative paths are under the output folder)."""

    path: str


Target = Origin | ChatTarget | FileTarget


def output_dir(home: Path) -> Path:
    """The folder relative ``file:`` targets are written to."""
    return home / "cron" / "output"


def parse_target(text: str, *, model: bool = False) -> Target:
    """Read a ``deliver`` value; ``model=True`` allows only ``origin`` and relative files."""
    value = text.strip()
    if not value or value.lower() == ORIGIN:
        return Origin()
    if value.startswith(FILE_PREFIX):
        return _file(value[len(FILE_PREFIX) :].strip(), model=model)
    if model:
        raise TargetError(
            f"Cannot deliver to {value!r}: a job you create delivers to 'origin' (this chat) "
            "or to 'file:<name>' (a file in the cron output folder)."
        )
    return _chat(value)


def format_target(target: Target) -> str:
    """The text form of ``target``, as stored in ``deliver`` and ``delivered_to``."""
    if isinstance(target, Origin):
        return ORIGIN
    if isinstance(target, FileTarget):
        return FILE_PREFIX + target.path
    platform = target.platform + (f"/{target.route}" if target.route else "")
    thread = f":{target.thread_id}" if target.thread_id else ""
    return f"{platform}:{target.chat_id}{thread}"


def file_path(target: FileTarget, home: Path) -> Path:
    """The absolute path a file target writes to."""
    path = Path(target.path).expanduser()
    return path if path.is_absolute() else output_dir(home) / path


def _file(path: str, *, model: bool) -> FileTarget:
    if not path:
        raise TargetError(f"'file:' needs a path. Use {FORMS}.")
    if model:
        posix, windows = PurePosixPath(path), PureWindowsPath(path)
        if posix.is_absolute() or windows.is_absolute() or path.startswith("~"):
            raise TargetError(f"{path!r} is absolute: name a file in the cron output folder.")
        if ".." in posix.parts or ".." in windows.parts:
            raise TargetError(f"{path!r} leaves the cron output folder: '..' is not allowed.")
    return FileTarget(path)


def _chat(value: str) -> ChatTarget:
    parts = value.split(":")
    if len(parts) not in (2, 3) or not all(part.strip() for part in parts):
        raise TargetError(f"Cannot read the delivery target {value!r}. Use {FORMS}.")
    platform, _, route = parts[0].partition("/")
    if not platform or (parts[0].endswith("/") and not route):
        raise TargetError(f"Cannot read the delivery target {value!r}. Use {FORMS}.")
    thread = parts[2] if len(parts) == 3 else None
    return ChatTarget(platform.lower(), parts[1], thread, route or None)
