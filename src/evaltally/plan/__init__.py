"""A sweep expanded into planned calls before anything is sent (docs/ledger.md).

sweep.py     every planned call of a config, with ids derived from content; the plan summary
batches.py   how a batch-mode model's calls split into rounds and provider batches
"""

from evaltally.plan.sweep import iter_plan, plan_rows, summarize_plan

__all__ = ["iter_plan", "plan_rows", "summarize_plan"]
