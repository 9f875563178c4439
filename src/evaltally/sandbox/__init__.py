"""Run code from data files in separate, resource-limited processes (shared by the benchmarks).

``runner`` is the parent side (``TaskPool``: a bounded pool of fork-server workers for asyncio
callers); ``worker`` is the fork server; ``inline`` forks the same child from the calling
process, for a caller that is itself a worker (the verification hook's); ``child`` is what runs
in every child (limits, guard, soft stops, result channel, how a child ended). The caller's
process never executes the code it hands over.
"""

from __future__ import annotations

from evaltally.sandbox.child import death_reason, stderr_tail
from evaltally.sandbox.runner import TaskLimits, TaskOutcome, TaskPool

__all__ = ["TaskLimits", "TaskOutcome", "TaskPool", "death_reason", "stderr_tail"]
