"""The batch driver: models with `mode = "batch"` run their chains in rounds through the
provider's batch API (docs/batch.md). `BatchDriver` is the entry point; touch.py names the
places where it meets the synchronous path."""

from evaltally.runner.batch.driver import (
    BatchBudget,
    BatchDriver,
    refuse_open_batches_in_sync_mode,
)

__all__ = ["BatchBudget", "BatchDriver", "refuse_open_batches_in_sync_mode"]
