"""The entry point of batch mode: every batch-mode model's chains run in rounds (rounds.py),
the models side by side, beside the synchronous scheduler's lanes."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from evaltally.runner import clock as clk
from evaltally.runner.scheduler import ChainWork, Scheduler
from evaltally.runner.transport import Transport


@dataclass(frozen=True)
class BatchBudget:
    """The run's budget as a batch sees it before submitting: the limit and what is spent."""

    limit: float
    spent: Callable[[], float]


class BatchDriver:
    def __init__(
        self,
        scheduler: Scheduler,
        transport: Transport,
        budget: BatchBudget | None = None,
        sleep: clk.Sleep = clk.sleep,
    ) -> None:
        self.scheduler = scheduler
        self.transport = transport
        self.budget = budget
        self.sleep = sleep

    async def run(self, work: list[ChainWork]) -> None:
        from evaltally.runner.batch.rounds import ModelRounds

        by_model: dict[str, list[ChainWork]] = defaultdict(list)
        for item in work:
            by_model[item.chain.calls[0].model].append(item)
        async with asyncio.TaskGroup() as group:
            for model, items in by_model.items():
                group.create_task(ModelRounds(self, self.scheduler.units[model], items).run())
