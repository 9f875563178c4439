"""Run code a model or a data file supplies behind a kernel-enforced boundary (shared by the
benchmarks).

``boundary`` starts each sandbox process under bubblewrap (own namespaces, no key, a read-only
view of the interpreter; or, chosen explicitly, the weaker process-only mode); ``runner`` is
the parent side (``TaskPool``: a bounded pool of fork-server workers for asyncio callers);
``worker`` is the fork server; ``inline`` reaches the same server synchronously, for a caller
that is itself a worker (the verification hook's); ``child`` is what runs in every child
(limits, a seccomp filter against new processes, the guard, soft stops, result channel, how a
child ended). The caller's process never executes the code it hands over.
"""

from __future__ import annotations

from evaltally.sandbox.child import death_reason, stderr_tail
from evaltally.sandbox.runner import TaskLimits, TaskOutcome, TaskPool

__all__ = ["TaskLimits", "TaskOutcome", "TaskPool", "death_reason", "stderr_tail"]
