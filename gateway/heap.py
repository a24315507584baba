"""The garbage collector around start-up: off while the gateway builds itself, then its
long-lived objects frozen out of every later collection.

Start-up builds what lives as long as the process: imported modules, pydantic
validators, SQLAlchemy metadata, the routes (~125k objects), and almost no garbage
(~200 objects in cycles). Collecting while they are built is wasted work: ~300 automatic
collections, the last full ones walking everything (~0.2 s of a start's CPU). So
``chatgate run`` turns the collector off first thing (``pause``), and once the gateway
is up ``settle`` freezes what exists, so that no later full collection walks it again
(under load each was a 50-85 ms pause stalling every request in flight), and turns the
collector back on. The little start-up garbage stays frozen with the rest.

Where the collector was never paused (the app built in-process, as the tests do),
``settle`` collects first, so that garbage left by earlier work is not frozen. Not undone
at shutdown: the process ends, and in tests an unfreeze made each later start's
collection walk everything again (+5 s on the suite).
"""

from __future__ import annotations

import gc


def pause() -> None:
    """No automatic collection until ``settle`` (call first thing in the process)."""
    gc.disable()


def settle() -> None:
    """Freeze every object that exists now and let the collector run again."""
    if gc.isenabled():
        gc.collect()
    gc.freeze()
    gc.enable()
