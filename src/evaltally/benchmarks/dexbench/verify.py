"""Backward verification: is a proposed input a set of literals, and does it reach the target?

``check`` is the function of the benchmark's verification job (``VerificationJob``): the
verification hook runs it in one of its worker processes (runner/workers.py), never in the
sweep's process, for every ``ok`` backward answer. The answer text is checked as an argument
tuple of literals first (``literals.py``; anything else is a failed verification with the
reason, and is never run); then the program, without its assertion, runs in a sandboxed child
of that worker's fork server, inside the OS boundary (``sandbox.boundary``: its own namespaces,
no key, no host process in sight), followed by ``entry(*args)``, and the target rule is applied
to the lines that ran (docs/dexbench.md, "Verification"). The benchmark program may turn the
answer into code (HumanEval/160 ``eval``s its arguments): whatever that code does ends as this
answer's verdict.

Verdicts: ``passed`` (the target ran; also when the program raised or was stopped after it),
``failed`` (refused answer, target not reached, or the program hit a limit first, took its
sandbox down included). When the sandbox itself fails there is no verdict about the answer:
``check`` raises, the hook records an ``error`` with the reason, and a re-grade runs it again.
Each verdict's detail names the sandbox it ran in (``os`` or the weaker ``process``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from evaltally.benchmarks.base import VerificationJob
from evaltally.errors import SandboxError
from evaltally.sandbox import TaskLimits
from evaltally.sandbox.boundary import OS, Boundary

from .coverage import Call, Trace, TraceFailure, trace_here
from .instances import Instance
from .lines import reached
from .literals import check_arguments

PASSED, FAILED = "passed", "failed"
#: Codes, each stable: why a verdict is what it is (the verdict's ``detail.code``).
REACHED = "reached"
NOT_REACHED = "not_reached"
NOT_A_LITERAL = "not_a_literal"
LIMIT = "limit"
CHECK = "evaltally.benchmarks.dexbench.verify:check"
#: The hook's own deadline for one check: beyond the sandbox's hard wall clock (10 + 3 s), so
#: the sandbox's limits, not this one, decide in every ordinary case.
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Verdict:
    verdict: str
    code: str
    message: str
    sandbox: str = OS

    @property
    def passed(self) -> bool:
        return self.verdict == PASSED

    def as_result(self) -> dict[str, Any]:
        """What the hook records: the verdict, with ``{code, message, sandbox}`` as its detail."""
        detail = {"code": self.code, "message": self.message, "sandbox": self.sandbox}
        return {"verdict": self.verdict, "detail": detail}


def job(
    instance: Instance,
    answer: str,
    limits: TaskLimits | None = None,
    timeout_s: float = TIMEOUT_S,
    sandbox: str = OS,
) -> VerificationJob:
    """The verification job of one backward answer (the text of its answer block), checked in
    the ``sandbox`` mode (``sandbox.boundary.MODES``)."""
    args: dict[str, Any] = {
        "instance": instance.id,
        "program": instance.program,
        "entry": instance.entry_point,
        "target_line": instance.target_line,
        "target_lines": list(instance.target_lines),
        "answer": answer,
        "limits": asdict(limits or TaskLimits()),
        "sandbox": sandbox,
    }
    return VerificationJob(CHECK, args, timeout_s=timeout_s)


def _lines(lines: set[int]) -> str:
    return ("line " if len(lines) == 1 else "lines ") + ", ".join(map(str, sorted(lines)))


def judge(target_line: int, target_lines: Sequence[int], run: Trace | TraceFailure) -> Verdict:
    """The verdict on one run of a checked answer (a sandbox that failed by itself raises)."""
    if isinstance(run, TraceFailure):
        if run.limit:
            return Verdict(FAILED, LIMIT, run.reason)
        raise SandboxError(f"the sandbox failed: {run.reason}")
    ending = f"stopped at the {run.stopped}" if run.stopped else run.error
    if reached(target_lines, run.covered):
        ran = _lines(set(target_lines) & run.covered)
        message = f"target line {target_line} reached ({ran} ran)"
        return Verdict(PASSED, REACHED, message + (f"; then {ending}" if ending else ""))
    if run.stopped:
        return Verdict(FAILED, LIMIT, f"target not reached; {ending}")
    message = f"target line {target_line} not reached"
    if ending:
        message += f"; the program raised {ending}"
    return Verdict(FAILED, NOT_REACHED, message)


def check(args: Mapping[str, Any]) -> dict[str, Any]:
    """The verification job's function (runs in a worker process; see ``job``)."""
    mode = str(args.get("sandbox", OS))
    arguments = check_arguments(args["answer"])
    if not arguments.ok:
        return Verdict(FAILED, NOT_A_LITERAL, arguments.reason, mode).as_result()
    limits = TaskLimits(**args["limits"])
    call = Call(args["entry"], arguments.source)
    run = trace_here(args["program"], call, limits, Boundary(mode))
    try:
        judged = judge(int(args["target_line"]), args["target_lines"], run)
    except SandboxError as exc:
        raise SandboxError(f"instance {args['instance']}: {exc}") from None
    return replace(judged, sandbox=mode).as_result()
