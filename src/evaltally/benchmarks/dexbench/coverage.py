"""Coverage of a DexBench program, measured in a sandboxed child (never in this process).

``trace`` runs the child through a ``TaskPool`` (the build); ``trace_here`` runs it through the
calling process's own fork server, for the verification hook's workers (``sandbox.inline``).
Both run it inside the OS boundary (``sandbox.boundary``) and apply the same line rule to the
same task's result.

The one tool for ground truth and verification is the project's own line tracer
(``trace_task.py``: ``sys.settrace`` line events in the child, plus the line table of the
compiled program), pinned by ``TRACER_VERSION``: a different rule makes different ground truth,
so the version is part of what the instance file was built with (docs/dexbench.md).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaltally.sandbox import TaskLimits, TaskOutcome, TaskPool, inline
from evaltally.sandbox.boundary import Boundary

from .lines import covered_lines, executable_lines

TRACE_TASK = Path(__file__).with_name("trace_task.py")
TRACER_VERSION = "settrace-lines-1"
#: Modules every sandbox worker imports once: what the programs and the tracer import.
PRELOAD = (
    "ast", "threading", "unittest", "math", "re", "string", "collections", "itertools",
    "functools", "datetime", "io", "typing", "heapq", "bisect", "copy", "array", "numbers",
    "operator", "statistics", "fractions", "decimal", "hashlib", "json",
)  # fmt: skip


def new_pool(jobs: int | None = None, boundary: Boundary | None = None) -> TaskPool:
    """A sandbox pool for DexBench programs (use as ``async with new_pool() as pool``)."""
    return TaskPool(jobs, preload=PRELOAD, boundary=boundary)


@dataclass(frozen=True)
class Trace:
    """One run of a program: what ran, and how it ended."""

    covered: frozenset[int]
    uncovered: frozenset[int]
    error: str | None
    """The program's exception (a failed assertion, a TypeError from a bad call), if any."""
    stopped: str | None
    """The soft limit that stopped the program, if any."""


@dataclass(frozen=True)
class TraceFailure:
    """No trace: the child was killed (``limit``) or the sandbox itself failed."""

    reason: str
    limit: bool


@dataclass(frozen=True)
class Call:
    """Call ``entry(*args)`` after the program minus its last statement (the backward run)."""

    entry: str
    args_source: str
    """Checked literal text (``literals.check_arguments``): read back by ``ast.literal_eval``."""


def _prepare(program: str, call: Call | None) -> tuple[ast.Module, dict[str, Any]] | Trace:
    """The parsed program and the task's payload; a program that does not compile is not run:
    its trace is empty with the SyntaxError."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte in the source
        return Trace(frozenset(), frozenset(), f"{type(exc).__name__}: {exc}", None)
    payload = {
        "program": program,
        "call": None if call is None else {"entry": call.entry, "args": call.args_source},
    }
    return tree, payload


def _measured(tree: ast.Module, outcome: TaskOutcome) -> Trace | TraceFailure:
    if outcome.result is None:
        return TraceFailure(outcome.error or "the sandbox failed", outcome.limit)
    result = outcome.result
    executable = executable_lines(tree)
    covered = covered_lines(executable, result["lines"], result["executed"])
    return Trace(covered, executable - covered, result["error"], result["stopped"])


async def trace(
    pool: TaskPool, program: str, call: Call | None = None, limits: TaskLimits | None = None
) -> Trace | TraceFailure:
    """Run ``program`` (or the backward ``call``) in a sandbox child of ``pool`` and apply the
    line rule."""
    prepared = _prepare(program, call)
    if isinstance(prepared, Trace):
        return prepared
    tree, payload = prepared
    return _measured(tree, await pool.run(TRACE_TASK, payload, limits))


def trace_here(
    program: str,
    call: Call | None = None,
    limits: TaskLimits | None = None,
    boundary: Boundary | None = None,
) -> Trace | TraceFailure:
    """``trace`` from a worker process, off any event loop: the child is forked by this
    process's fork server (``sandbox.inline``)."""
    prepared = _prepare(program, call)
    if isinstance(prepared, Trace):
        return prepared
    tree, payload = prepared
    outcome = inline.run_task(TRACE_TASK, payload, limits, boundary=boundary, preload=PRELOAD)
    return _measured(tree, outcome)
