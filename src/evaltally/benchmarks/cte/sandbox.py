"""Run the oracle on service code from a data file in a separate, resource-limited process.

The runner process never executes data-file code. ``replay_in_sandbox`` starts
``python -s -S -B -P -m evaltally.benchmarks.cte.sandbox`` inside the OS boundary
(``evaltally.sandbox.boundary``: bubblewrap namespaces, uid 65534, no network, a read-only view
of the interpreter, the package and its dependencies, a private ``/tmp`` as working directory,
an environment holding only ``PYTHONPATH``) and feeds it a batch of records on stdin. The child
sets RLIMIT_AS (memory), installs the shared guard (no processes, sockets or writes outside its
directory; ``evaltally.sandbox.child``: a second layer) and a per-record RLIMIT_CPU budget,
then streams one JSON line per record on a private copy of stdout (service ``print`` output
goes to stderr, so it cannot forge results). The parent enforces a wall-clock deadline per
record. Without bwrap nothing runs (``SandboxUnavailable``); ``Limits.sandbox = "process"``
chooses the weaker process-only mode explicitly.

If the child dies or overruns (CPU, memory, wall clock), the record in progress is known (it is
the first one without a result line): it gets a failure naming it, and the rest of the batch
continues in a fresh child.
"""

from __future__ import annotations

import json
import os
import selectors
import site
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from evaltally.errors import EvaltallyError, SandboxError
from evaltally.sandbox import child, death_reason, stderr_tail
from evaltally.sandbox.boundary import OS, PACKAGE_DIR, Boundary

from .executor import ReplayResult, replay_record

MODULE = "evaltally.benchmarks.cte.sandbox"


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandbox child."""

    cpu_seconds_per_record: int = 10
    memory_bytes: int = 1024 * 1024 * 1024
    wall_seconds_per_record: float = 20.0
    startup_seconds: float = 30.0
    sandbox: str = OS
    """``os`` (bubblewrap) or the weaker ``process`` (``evaltally.sandbox.boundary``)."""


@dataclass(frozen=True)
class SandboxOutcome:
    """The result of one record: ``result`` or an ``error`` message naming the record."""

    item_id: str
    result: ReplayResult | None
    error: str | None = None


def _result_to_json(r: ReplayResult) -> dict[str, Any]:
    return {
        "item_id": r.item_id,
        "prefix": r.prefix,
        "original": r.original,
        "counterfactual": r.counterfactual,
        "final_state_original": r.final_state_original,
        "final_state_cf": r.final_state_cf,
        "post_history_state": r.post_history_state,
        "found_from_value": r.found_from_value,
        "late_serialization": r.late_serialization,
    }


def _result_from_json(d: Mapping[str, Any]) -> ReplayResult:
    return ReplayResult(**d)


# ---------------------------------------------------------------------------------- child side


def child_main() -> int:
    """Entry point of the sandbox child: replay the records given on stdin."""
    proto = child.open_protocol()  # anything the service prints goes to stderr
    job = json.load(sys.stdin)
    child.apply_limits(memory_bytes=int(job["memory_bytes"]))
    child.forbid_processes()
    child.install_guard(str(Path.cwd()))
    sources: dict[str, str] = job["unedited_sources"]
    for i, record in enumerate(job["records"]):
        child.cpu_budget(int(job["cpu_seconds_per_record"]))
        line: dict[str, Any] = {"i": i}
        try:
            res = replay_record(
                record, unedited_sources=sources, late_serialization=job["late_serialization"]
            )
            line["result"] = _result_to_json(res)
        except EvaltallyError as exc:
            line["error"] = str(exc)
        except BaseException as exc:  # the service's own code crashed or called exit()
            line["error"] = f"{type(exc).__name__}: {exc}"
        proto.write(json.dumps(line) + "\n")
        proto.flush()
    return 0


# --------------------------------------------------------------------------------- parent side


def _item_id(record: Mapping[str, Any]) -> str:
    return str(record.get("item_id", "?"))


def _run_batch(
    records: Sequence[Mapping[str, Any]],
    sources: Mapping[str, str],
    late: bool,
    limits: Limits,
) -> list[SandboxOutcome]:
    """Run records in one child; on a crash, name the culprit and continue in a new child."""
    outcomes: list[SandboxOutcome] = []
    start = 0
    while start < len(records):
        batch = records[start:]
        got, failure = _one_child(batch, sources, late, limits)
        outcomes.extend(got)
        start += len(got)
        if failure is not None:
            outcomes.append(
                SandboxOutcome(
                    _item_id(records[start]), None, f"record {_item_id(records[start])}: {failure}"
                )
            )
            start += 1
    return outcomes


def boundary_of(limits: Limits) -> Boundary:
    """The child's boundary: it imports evaltally and its dependencies, read-only."""
    found = [p for p in (*site.getsitepackages(), site.getusersitepackages()) if Path(p).is_dir()]
    return Boundary(limits.sandbox, read_only=tuple(found))


def _command(boundary: Boundary) -> tuple[list[str], dict[str, str]]:
    """The child's command line inside ``boundary`` and its environment: only the import path
    (no site-packages processing, no bytecode writes)."""
    path = os.pathsep.join([str(PACKAGE_DIR.parent), *boundary.read_only])
    env = {"PYTHONPATH": path}
    return boundary.command([sys.executable, "-s", "-S", "-B", "-P", "-m", MODULE], env), env


def _one_child(
    batch: Sequence[Mapping[str, Any]],
    sources: Mapping[str, str],
    late: bool,
    limits: Limits,
) -> tuple[list[SandboxOutcome], str | None]:
    job = {
        "records": list(batch),
        "unedited_sources": dict(sources),
        "late_serialization": late,
        "memory_bytes": limits.memory_bytes,
        "cpu_seconds_per_record": limits.cpu_seconds_per_record,
    }
    payload = json.dumps(job).encode()
    out: list[SandboxOutcome] = []
    with tempfile.TemporaryDirectory(prefix="cte-sandbox-") as cwd, tempfile.TemporaryFile() as err:
        try:
            boundary = boundary_of(limits)
            argv, env = _command(boundary)
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=cwd, env=env
            )
        except OSError as exc:
            raise SandboxError(f"cannot start the sandbox process: {exc}") from exc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(payload)
            proc.stdin.close()
        except BrokenPipeError:
            pass
        failure: str | None = None
        buf = b""
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + limits.startup_seconds + limits.wall_seconds_per_record
        try:
            while len(out) < len(batch):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    failure = f"timed out after {limits.wall_seconds_per_record:g} s wall clock"
                    break
                if not sel.select(timeout=remaining):
                    continue
                chunk = os.read(proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    failure = _death_reason(proc, err, boundary)
                    break
                buf += chunk
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    msg = json.loads(raw)
                    rec = batch[int(msg["i"])]
                    if "result" in msg:
                        out.append(SandboxOutcome(_item_id(rec), _result_from_json(msg["result"])))
                    else:
                        out.append(
                            SandboxOutcome(
                                _item_id(rec), None, f"record {_item_id(rec)}: {msg['error']}"
                            )
                        )
                    deadline = time.monotonic() + limits.wall_seconds_per_record
        finally:
            sel.close()
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
    return out, failure


def _death_reason(proc: subprocess.Popen[bytes], err: IO[bytes], boundary: Boundary) -> str:
    try:
        code = proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    return death_reason(boundary.exit_status(code), stderr_tail(err.fileno()))


def replay_in_sandbox(
    records: Sequence[Mapping[str, Any]],
    *,
    unedited_sources: Mapping[str, str],
    late_serialization: bool = False,
    limits: Limits | None = None,
    jobs: int | None = None,
) -> list[SandboxOutcome]:
    """Replay raw records in sandbox children; one outcome per record, in order.

    Records are split into at most ``jobs`` batches (default: CPU count, max 4) that run in
    parallel children. A failing record yields an outcome with ``error`` set; use
    ``require_results`` to turn failures into a ``SandboxError``."""
    lim = limits or Limits()
    boundary_of(lim).require("CTE replay of data-file services")  # refuses without bwrap
    n = max(1, min(jobs or min(os.cpu_count() or 1, 4), len(records)))
    size = -(-len(records) // n) if records else 0
    chunks = [records[i : i + size] for i in range(0, len(records), size)] if size else []
    with ThreadPoolExecutor(max_workers=max(1, len(chunks))) as pool:
        parts = list(
            pool.map(lambda c: _run_batch(c, unedited_sources, late_serialization, lim), chunks)
        )
    return [o for part in parts for o in part]


def require_results(outcomes: Sequence[SandboxOutcome]) -> list[ReplayResult]:
    """The results, or a ``SandboxError`` naming the first failed record."""
    results = []
    for o in outcomes:
        if o.result is None:
            raise SandboxError(o.error or f"record {o.item_id}: failed in the sandbox")
        results.append(o.result)
    return results


if __name__ == "__main__":
    raise SystemExit(child_main())
