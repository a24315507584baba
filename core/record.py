"""``@record``: the decorator for chatgate's value records.

A record is a dataclass with slots that the type checker treats as frozen: mypy
(``make check``) rejects any assignment to a field, and ``dataclasses.replace`` makes a
changed copy. At run time its ``__init__`` assigns the slots directly. A
``frozen=True`` dataclass sets every field through ``object.__setattr__`` instead,
which on CPython 3.11 makes a ten-field record cost about 1.3 µs to build against
0.2 µs, and a turn builds dozens of them (``docs/performance.md``). Equality and
hashing are those of a frozen dataclass (``unsafe_hash``: the fields are not
reassigned, so the hash holds). What it gives up: nothing refuses an assignment at run
time, so code that mypy does not check must treat records as read-only too.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: type[T]) -> type[T]:
    """Make ``cls`` a record (see the module docstring)."""
    return dataclasses.dataclass(cls, slots=True, unsafe_hash=True)
