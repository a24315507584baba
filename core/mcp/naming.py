"""The names the model sees for MCP tools, and which of a server's tools it offers.

A tool ``<tool>`` of server ``<server>`` reaches the model as ``mcp_<server>_<tool>``,
every character outside ``[a-zA-Z0-9_-]`` replaced by ``_``: providers accept only those,
and at most 64 of them. A longer name keeps its first 55 characters and ends with ``_``
and 8 hex digits of the full name's SHA-256, so the cut is the same on every start and
two long names that share a prefix still differ.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Sequence

MAX_NAME_CHARS = 64
_HASH_CHARS = 8
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
# What a server may be called in config.yaml: it becomes part of every tool name.
SERVER_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,31}$")


def model_name(server: str, tool: str) -> str:
    """``mcp_<server>_<tool>``, sanitised and cut to ``MAX_NAME_CHARS`` (see the module
    docstring)."""
    full = _UNSAFE.sub("_", f"mcp_{server}_{tool}")
    if len(full) <= MAX_NAME_CHARS:
        return full
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:_HASH_CHARS]
    return f"{full[: MAX_NAME_CHARS - _HASH_CHARS - 1]}_{digest}"


def offered(tool: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether a server's tool ``tool`` is offered: it matches one of ``include`` (when
    any are given) and none of ``exclude`` (fnmatch globs over the server's own names)."""
    if include and not any(fnmatch.fnmatchcase(tool, glob) for glob in include):
        return False
    return not any(fnmatch.fnmatchcase(tool, glob) for glob in exclude)
