"""The open sessions kept in memory: an LRU bounded by their estimated bytes.

A count bound (4,096 sessions) let memory grow with session length: full of 1,000-turn
sessions it would have held gigabytes. Each state is weighed (``SessionState.weigh``)
when it is cached and again when a turn grows it; the least recently used states are
dropped until the total is under ``max_bytes``. A dropped session loses nothing: its
transcript is read back from the SessionDB at its next message.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

from core.session_state import SessionState


class SessionCache:
    """See the module docstring."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._states: OrderedDict[str, SessionState] = OrderedDict()
        self._weights: dict[str, int] = {}
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._states)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._states))

    @property
    def nbytes(self) -> int:
        """The estimated bytes of every cached state together."""
        return self._bytes

    def peek(self, key: str) -> SessionState | None:
        return self._states.get(key)

    def use(self, key: str) -> SessionState | None:
        """The state of ``key``, now the most recently used."""
        state = self._states.get(key)
        if state is not None:
            self._states.move_to_end(key)
        return state

    def put(self, key: str, state: SessionState) -> None:
        """Cache ``state`` as the most recently used, dropping others over the cap."""
        self.pop(key)
        self._states[key] = state
        self.reweigh(key)

    def reweigh(self, key: str) -> None:
        """Weigh ``key``'s state again (a turn grew it) and keep the total under the cap."""
        state = self._states.get(key)
        if state is None:
            return
        weight = state.weigh()
        self._bytes += weight - self._weights.get(key, 0)
        self._weights[key] = weight
        self._evict(keep=key)

    def pop(self, key: str) -> None:
        if self._states.pop(key, None) is not None:
            self._bytes -= self._weights.pop(key)

    def _evict(self, keep: str) -> None:
        # The state just weighed stays even alone over the cap: its turn is using it.
        while self._bytes > self._max_bytes and len(self._states) > 1:
            oldest = next(iter(self._states))
            if oldest == keep:
                self._states.move_to_end(keep)
                oldest = next(iter(self._states))
            self.pop(oldest)
