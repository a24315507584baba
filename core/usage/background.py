"""``BackgroundModel``: the model as background work (review, curator, cron) calls it.

Each call is charged to its kind of work and to no person, and is refused with
``BudgetExceeded`` before it reaches the model when the background (or global) budget is
used up; the services treat that as a skipped run.
"""

from __future__ import annotations

from core.models.base import ModelClient, ModelReply, ModelRequest, ModelWrapper
from core.usage.attribution import Kind, attributed
from core.usage.gate import BudgetGate


class BackgroundModel(ModelWrapper):
    """See the module docstring."""

    def __init__(self, inner: ModelClient, kind: Kind, gate: BudgetGate) -> None:
        super().__init__(inner)
        self._kind = kind
        self._gate = gate

    async def complete(self, request: ModelRequest) -> ModelReply:
        await self._gate.check_background(self._kind)
        with attributed(kind=self._kind, person=None):
            return await self._inner.complete(request)
