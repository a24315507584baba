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

Under load, Python's default young threshold (700) let the collector run a young
collection every seven turns or so and, through them, a full collection every ~800
turns, walking every object not frozen (the cached transcripts among them): in 9,000
webhook turns, 1,352 young, 122 middle and 11 full collections. ``settle`` raises the
young threshold to ``YOUNG_THRESHOLD``: 3 young collections and no older one in the same
run, and about a tenth less CPU on the event loop's thread (``bench/throughput.py``).
Reference cycles are rare here (the turn's objects die by reference count), so the
collector running less often holds little more memory.

Where the collector was never paused (the app built in-process, as the tests do),
``settle`` collects first, so that garbage left by earlier work is not frozen. Not undone
at shutdown: the process ends, and in tests an unfreeze made each later start's
collection walk everything again (+5 s on the suite).
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000  # Python's default is 700; the older generations keep theirs


def pause() -> None:
    """No automatic collection until ``settle`` (call first thing in the process)."""
    gc.disable()


def settle() -> None:
    """Freeze every object that exists now and let the collector run again."""
    if gc.isenabled():
        gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    gc.enable()
