"""The outbox folder: files the agent may send, and the checks that keep it to them.

A path the model gives is taken from the folder when relative; an absolute one must
lie inside it. Symbolic links are followed and the target must still lie inside, so a
link cannot reach out. A ``..`` part is refused outright (a file inside never needs
one). Only a regular file is sent: a directory, a device, a socket or a pipe is
refused, and so is an empty file or one over the size cap. ``read`` blocks: run it in
a thread.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePath

from core.errors import ToolArgumentError
from core.record import record

MAX_PATH_CHARS = 4096


@record
class OutboxFile:
    """A file read from the folder: the name it is sent under, and its bytes."""

    name: str
    data: bytes


class OutboxFolder:
    """See the module docstring; ``root`` is ``<home>/outbox``."""

    def __init__(self, root: Path, *, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes

    def ensure(self) -> None:
        """Create the folder, so people and tools know where files to send go."""
        self.root.mkdir(parents=True, exist_ok=True)

    def read(self, given: str) -> OutboxFile:
        """The file at ``given``; ``ToolArgumentError`` saying plainly why not."""
        target = self.resolve(given)
        return OutboxFile(PurePath(given).name, self._read_regular(target, given))

    def resolve(self, given: str) -> Path:
        """``given`` as a real path inside the folder (links followed)."""
        if not given.strip() or "\x00" in given or len(given) > MAX_PATH_CHARS:
            raise ToolArgumentError("'path' must name a file in the outbox folder")
        path = PurePath(given)
        if ".." in path.parts:
            raise ToolArgumentError(f"{given!r}: '..' is not allowed; name a file in outbox/")
        root = self.root.resolve()
        try:
            real = (root / path).resolve(strict=True)
        except FileNotFoundError:
            raise ToolArgumentError(f"{given!r}: no such file in outbox/") from None
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
            raise ToolArgumentError(f"{given!r}: cannot be opened ({exc})") from None
        if real == root or not real.is_relative_to(root):
            raise ToolArgumentError(
                f"{given!r} is outside the outbox folder ({root}): only files there can be sent"
            )
        return real

    def _read_regular(self, real: Path, given: str) -> bytes:
        info = real.stat()
        if stat.S_ISDIR(info.st_mode):
            raise ToolArgumentError(f"{given!r} is a directory: name one file")
        if not stat.S_ISREG(info.st_mode):
            raise ToolArgumentError(f"{given!r} is not a regular file (a device, pipe or socket)")
        self._check_size(info.st_size, given)
        # No blocking on a pipe swapped in since the check, no link swapped in for the file.
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise ToolArgumentError(f"{given!r} is not a regular file")
            data = file.read(self.max_bytes + 1)
        self._check_size(len(data), given)
        if not data:
            raise ToolArgumentError(f"{given!r} is empty: there is nothing to send")
        return data

    def _check_size(self, size: int, given: str) -> None:
        if size > self.max_bytes:
            raise ToolArgumentError(
                f"{given!r} is {size:,} bytes, over the limit of {self.max_bytes:,} "
                "(files.max_bytes)"
            )
