"""What every model's batch rounds share with the rest of the run: the scheduler whose ledger
and counters the batch calls meet, the transport, the run's budget and the clock. The driver
builds it; rounds.py reads it (and never the driver, which imports rounds only when a
batch-mode model exists)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evaltally.runner import clock as clk
from evaltally.runner.scheduler import Scheduler
from evaltally.runner.transport import Transport


@dataclass(frozen=True)
class BatchBudget:
    """The run's budget as a batch sees it before submitting: the limit and what is spent."""

    limit: float
    spent: Callable[[], float]


@dataclass(frozen=True)
class BatchContext:
    scheduler: Scheduler
    transport: Transport
    budget: BatchBudget | None
    sleep: clk.Sleep
