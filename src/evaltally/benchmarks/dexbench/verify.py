"""Backward verification: is a proposed input a set of literals, and does it reach the target?

``verify_backward`` is what the benchmark's verification hook calls for every ``ok`` backward
answer. The answer text is checked as an argument tuple of literals first (``literals.py``;
anything else is a failed verification with the reason, and is never run); then the program,
without its assertion, runs in a sandboxed child followed by ``entry(*args)``, and the target
rule is applied to the lines that ran (docs/dexbench.md, "Verification").

Verdicts: ``passed`` (the target ran; also when the program raised or was stopped after it),
``failed`` (refused answer, target not reached, or the program hit a limit first), ``error``
(the sandbox itself failed: no verdict about the answer, a re-grade runs it again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaltally.sandbox import TaskLimits, TaskPool

from .coverage import Call, TraceFailure, trace
from .instances import Instance
from .lines import reached
from .literals import check_arguments

PASSED, FAILED, ERROR = "passed", "failed", "error"
#: Reasons, each a stable code: why a verdict is what it is.
REACHED = "reached"
NOT_REACHED = "not_reached"
NOT_A_LITERAL = "not_a_literal"
LIMIT = "limit"
SANDBOX = "sandbox"


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str
    detail: str

    @property
    def passed(self) -> bool:
        return self.verdict == PASSED

    def as_dict(self) -> dict[str, Any]:
        """The ``verification`` object of an export row."""
        return {
            "verdict": self.verdict,
            "passed": self.passed,
            "reason": self.reason,
            "detail": self.detail,
        }


def _lines(lines: set[int]) -> str:
    return ("line " if len(lines) == 1 else "lines ") + ", ".join(map(str, sorted(lines)))


async def verify_backward(
    instance: Instance, answer: str | bytes, *, pool: TaskPool, limits: TaskLimits | None = None
) -> Verdict:
    """The verdict on one backward answer (the text of its answer block)."""
    args = check_arguments(answer)
    if not args.ok:
        return Verdict(FAILED, NOT_A_LITERAL, args.reason)
    run = await trace(pool, instance.program, Call(instance.entry_point, args.source), limits)
    if isinstance(run, TraceFailure):
        if run.limit:
            return Verdict(FAILED, LIMIT, run.reason)
        return Verdict(ERROR, SANDBOX, run.reason)
    ending = f"stopped at the {run.stopped}" if run.stopped else run.error
    if reached(instance.target_lines, run.covered):
        ran = _lines(set(instance.target_lines) & run.covered)
        detail = f"target line {instance.target_line} reached ({ran} ran)"
        return Verdict(PASSED, REACHED, detail + (f"; then {ending}" if ending else ""))
    if run.stopped:
        return Verdict(FAILED, LIMIT, f"target not reached; {ending}")
    detail = f"target line {instance.target_line} not reached"
    if ending:
        detail += f"; the program raised {ending}"
    return Verdict(FAILED, NOT_REACHED, detail)
