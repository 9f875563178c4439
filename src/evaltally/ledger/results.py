"""What the ledger hands back to the runner: plan deltas and the work that remains."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from evaltally.records import PlannedCall, Status


@dataclass(frozen=True, slots=True)
class PlanDelta:
    total: int
    """Planned calls in the config's plan (= added + already)."""
    added: int
    """Calls appended by this reconcile (all of them for a new ledger)."""
    already: int
    """Calls the ledger had recorded before."""
    superseded: dict[str, int] = field(default_factory=dict)
    """Model key -> its recorded calls this reconcile superseded (`--replace-model`)."""


@dataclass(frozen=True, slots=True)
class RecordedAnswer:
    """The final (ok/parse_error) outcome of one step, as a later step's prompt needs it."""

    status: Status
    raw_text: str | None
    parsed: Any
    request_hash: str | None
    seq: float = math.inf
    """The outcome's row in the ledger: which answers of the chain were known when it was
    sent (those recorded before it)."""


@dataclass(frozen=True, slots=True)
class PendingChain:
    chain_id: str
    calls: list[PlannedCall]
    """Every planned call of the chain, in step order (finished ones included)."""
    recorded: dict[int, RecordedAnswer]
    """step -> recorded final answer, for the steps that have one."""
    attempts_so_far: dict[str, int] = field(default_factory=dict)
    """call_id -> highest attempt number started so far (absent = never attempted), so attempt
    numbers continue across sessions: the next attempt of a call is attempts_so_far + 1."""

    @property
    def remaining(self) -> int:
        return len(self.calls) - len(self.recorded)


@dataclass(frozen=True, slots=True)
class PendingCount:
    """What remains for one model."""

    calls: int
    """Its calls without a final outcome."""
    chains: int
    """Chains with at least one such call."""


@dataclass(frozen=True, slots=True)
class ToVerify:
    """An ok answer whose benchmark verifies answers, as the verifier needs it."""

    call: PlannedCall
    raw_text: str | None
    parsed: Any
    verdict: str | None
    """The latest recorded verdict (passed/failed/error), None when there is none yet."""
