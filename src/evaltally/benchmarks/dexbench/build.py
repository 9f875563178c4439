"""Build DexBench instances from upstream CRUXEval, HumanEval and (user-supplied) PythonSaga.

Selection, as in the published set (docs/dexbench.md): CRUXEval records with control flow whose
program runs and leaves a line uncovered; HumanEval/PythonSaga solutions with control flow,
whose first ``assert candidate(`` runs, with the first test (that one or a later one) that runs
and leaves a line uncovered. Every program is measured in a sandboxed child. For HumanEval and
PythonSaga the other test inputs are also tried as backward answers: the first that reaches
the target is kept as ``known_good_input``.

The published counts: CRUXEval 800 -> 594 -> 298, HumanEval 164 -> 117 -> 100,
PythonSaga 185 -> 70 -> 47.
"""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from evaltally.errors import DataError, SandboxError
from evaltally.jsonl import read_objects
from evaltally.sandbox import TaskPool
from evaltally.sandbox.boundary import OS, Boundary

from . import programs
from .coverage import Call, Trace, TraceFailure, new_pool, trace
from .instances import Instance
from .lines import choose_target, executable_lines, reached
from .literals import check_arguments

PACKAGE_DATA = Path(__file__).resolve().parents[2] / "data" / "dexbench"
CRUXEVAL_FILE = PACKAGE_DATA / "cruxeval.jsonl"
HUMANEVAL_FILE = PACKAGE_DATA / "HumanEval.jsonl.gz"
_CRUX_FIELDS = ("id", "code", "input", "output")
_SCRIPT_FIELDS = ("prompt", "canonical_solution", "test", "entry_point")


@dataclass
class SourceCounts:
    """How many records survive each stage of one source."""

    records: int = 0
    control_flow: int = 0
    runs: int = 0
    kept: int = 0
    known_good: int = 0


@dataclass
class BuildResult:
    instances: list[Instance]
    counts: dict[str, SourceCounts] = field(default_factory=dict)


def _fields(raw: Mapping[str, Any], names: Sequence[str], where: str) -> list[str]:
    missing = [n for n in names if not isinstance(raw.get(n), str)]
    if missing:
        raise DataError(f"{where}: missing or non-string field(s) {', '.join(missing)}")
    return [raw[n] for n in names]


def make_instance(
    source: str,
    source_id: str,
    entry: str,
    program: str,
    test: programs.Assertion,
    run: Trace,
    known_good: str | None = None,
) -> Instance:
    """The instance of ``program`` from its measured ``run`` (which left a line uncovered)."""
    tree = ast.parse(program)
    target = choose_target(tree, run.uncovered)
    assert target is not None  # only programs with an uncovered line get here
    return Instance(
        id=f"{source}/{source_id}",
        source=source,
        source_id=source_id,
        entry_point=entry,
        program=program,
        input=test.input,
        test_index=test.index,
        executable_lines=tuple(sorted(executable_lines(tree))),
        covered_lines=tuple(sorted(run.covered)),
        uncovered_lines=tuple(sorted(run.uncovered)),
        target_line=target.line,
        target_rule=target.rule,
        target_lines=target.success_lines,
        known_good_input=known_good,
    )


def _measured(run: Trace | TraceFailure, where: str) -> Trace | None:
    """The trace, or None for a program stopped by a limit (it does not run); a sandbox that
    failed by itself stops the build, which must not silently lose an instance."""
    if isinstance(run, Trace):
        return run
    if run.limit:
        return None
    raise SandboxError(f"{where}: the sandbox failed: {run.reason}")


def _ran(run: Trace | None) -> TypeGuard[Trace]:
    """The program ran to its end (its assertion passed)."""
    return run is not None and run.error is None and run.stopped is None


async def _cruxeval(path: Path, pool: TaskPool, counts: SourceCounts) -> list[Instance]:
    rows = []
    for lineno, raw in read_objects(path, "CRUXEval file"):
        counts.records += 1
        sid, code, inp, out = _fields(raw, _CRUX_FIELDS, f"{path}:{lineno}")
        if programs.has_crux_control_flow(code):
            rows.append((sid, programs.cruxeval_program(code, inp, out), inp))
    counts.control_flow = len(rows)
    runs = await asyncio.gather(*(trace(pool, program) for _, program, _ in rows))
    kept = []
    for (sid, program, inp), result in zip(rows, runs, strict=True):
        run = _measured(result, f"{path}: {sid}")
        if not _ran(run):
            continue
        counts.runs += 1
        if run.uncovered:
            test = programs.Assertion(0, program.rstrip("\n").rsplit("\n", 1)[-1], inp)
            entry = programs.CRUX_ENTRY_POINT
            kept.append(make_instance("cruxeval", sid, entry, program, test, run))
    counts.kept = len(kept)
    return kept


async def _known_good(
    pool: TaskPool, program: str, entry: str, target_lines: Sequence[int], inputs: Sequence[str]
) -> str | None:
    """The first of ``inputs`` that passes the literal rule and reaches the target."""
    for text in inputs:
        args = check_arguments(text)
        if not args.ok:
            continue
        run = await trace(pool, program, Call(entry, args.source))
        if isinstance(run, Trace) and reached(target_lines, run.covered):
            return text
    return None


async def _script_record(
    source: str, sid: str, raw: Mapping[str, Any], where: str, pool: TaskPool, counts: SourceCounts
) -> Instance | None:
    prompt, canonical, test_source, entry = _fields(raw, _SCRIPT_FIELDS, where)
    solution = prompt + canonical
    try:
        has_flow = programs.control_flow_count(ast.parse(solution)) > 0
        tests = list(programs.test_calls(test_source, entry))
    except SyntaxError:
        return None  # upstream code that does not parse cannot run
    if not has_flow:
        return None
    counts.control_flow += 1
    chosen: tuple[programs.Assertion, str, Trace] | None = None
    for test in tests:
        program = programs.script_program(solution, test.assertion)
        run = _measured(await trace(pool, program), where)
        if test is tests[0]:
            if not _ran(run):
                return None
            counts.runs += 1
        if _ran(run) and run.uncovered:
            chosen = (test, program, run)
            break
    if chosen is None:
        return None
    test, program, run = chosen
    target = choose_target(ast.parse(program), run.uncovered)
    assert target is not None
    others = list(dict.fromkeys(t.input for t in tests if t.input != test.input))
    known = await _known_good(pool, program, entry, target.success_lines, others)
    return make_instance(source, sid, entry, program, test, run, known)


async def _scripts(source: str, path: Path, pool: TaskPool, counts: SourceCounts) -> list[Instance]:
    jobs = []
    for lineno, raw in read_objects(path, f"{source} file"):
        counts.records += 1
        sid = str(raw.get("task_id")) if source == "humaneval" else str(lineno - 1)
        jobs.append(_script_record(source, sid, raw, f"{path}:{lineno}", pool, counts))
    kept = [i for i in await asyncio.gather(*jobs) if i is not None]
    counts.kept = len(kept)
    counts.known_good = sum(i.known_good_input is not None for i in kept)
    return kept


async def build_async(
    *,
    cruxeval: Path = CRUXEVAL_FILE,
    humaneval: Path = HUMANEVAL_FILE,
    pythonsaga: Path | None = None,
    jobs: int | None = None,
    sandbox: str = OS,
) -> BuildResult:
    """Every instance, in source order: CRUXEval, HumanEval, then PythonSaga when given; the
    programs run in ``sandbox`` mode (``sandbox.boundary``)."""
    result = BuildResult([])
    sources: list[tuple[str, Path]] = [("humaneval", humaneval)]
    if pythonsaga is not None:
        sources.append(("pythonsaga", pythonsaga))
    async with new_pool(jobs, Boundary(sandbox)) as pool:
        result.counts["cruxeval"] = SourceCounts()
        result.instances += await _cruxeval(cruxeval, pool, result.counts["cruxeval"])
        for source, path in sources:
            counts = result.counts[source] = SourceCounts()
            result.instances += await _scripts(source, path, pool, counts)
    return result


def build(**kwargs: Any) -> BuildResult:
    return asyncio.run(build_async(**kwargs))
