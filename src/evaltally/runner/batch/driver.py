"""The entry point of batch mode: every batch-mode model's chains run in rounds (rounds.py),
the models side by side, beside the synchronous scheduler's lanes."""

from __future__ import annotations

import asyncio
from collections import defaultdict

from evaltally.errors import LedgerError
from evaltally.ledger import Ledger
from evaltally.runner import clock as clk
from evaltally.runner.batch.context import BatchBudget, BatchContext
from evaltally.runner.call import LaneUnit
from evaltally.runner.scheduler import ChainWork, Scheduler
from evaltally.runner.transport import Transport


async def refuse_open_batches_in_sync_mode(ledger: Ledger, units: dict[str, LaneUnit]) -> None:
    """A model switched back to sync mode while a batch of it is still open would send that
    batch's calls a second time: refused until the batch is collected in batch mode."""
    book = ledger.batch_book()
    for key, unit in units.items():
        if unit.model.mode != "batch" and (held := await book.open_batches(key)):
            raise LedgerError(
                f"model {key!r} has {len(held)} batch(es) still open from an earlier session "
                f'({held[0].key}); its provider may still answer them. Set mode = "batch" '
                "for it in the run's config.toml and `tally resume` to collect them first"
            )


class BatchDriver:
    def __init__(
        self,
        scheduler: Scheduler,
        transport: Transport,
        budget: BatchBudget | None = None,
        sleep: clk.Sleep = clk.sleep,
    ) -> None:
        self.context = BatchContext(scheduler, transport, budget, sleep)

    async def run(self, work: list[ChainWork]) -> None:
        if not work:
            return  # no batch-mode model: the rounds and batch adapters are never even imported
        from evaltally.runner.batch.rounds import ModelRounds

        by_model: dict[str, list[ChainWork]] = defaultdict(list)
        for item in work:
            by_model[item.chain.calls[0].model].append(item)
        async with asyncio.TaskGroup() as group:
            for model, items in by_model.items():
                unit = self.context.scheduler.units[model]
                group.create_task(ModelRounds(self.context, unit, items).run())
