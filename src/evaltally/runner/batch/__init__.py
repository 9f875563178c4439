"""The batch driver: models with `mode = "batch"` run their chains in rounds through the
provider's batch API (docs/batch.md). `BatchDriver` is the entry point. Batch calls meet the
synchronous path at exactly the same places: the benchmark's `render`, `runner.call`'s
`completion_result`, and the scheduler's `record` and `check_recorded` (over the same
`ChainWork` walk, cursor.py), so prompts, parsing, statuses and counters are the sync ones."""

from evaltally.runner.batch.context import BatchBudget
from evaltally.runner.batch.driver import BatchDriver, refuse_open_batches_in_sync_mode

__all__ = ["BatchBudget", "BatchDriver", "refuse_open_batches_in_sync_mode"]
