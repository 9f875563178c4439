"""Benchmark kinds that exist only for the tests, registered with `register()` from here.

The package's registry lists real benchmarks only; these kinds reach `tally` through
`register_kinds()`: in-process tests call it, subprocess tests run `tally` through `main()`
below (`python -c "import kinds_kit; kinds_kit.main()" run ...`) with this folder on
PYTHONPATH, which the verification workers inherit too.

- `observe_judge`: two roles. An observer answers a probe; a judge sees the observer's
  recorded answer and answers with JSON. Each role has its own parser.
- `verified`: one role; every ok answer is verified by `check` in a worker process. Items v3,
  v4 and v5 make the check raise, hang past its timeout and kill its own process; the option
  `broken` names an item whose prompt the benchmark fails to render.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import orjson

from evaltally.benchmarks.base import (
    Benchmark,
    BenchmarkKind,
    BenchmarkOptions,
    ChainTemplate,
    ParseResult,
    StepAnswer,
    VerificationJob,
)
from evaltally.benchmarks.registry import register
from evaltally.records import Message, PlannedCall, content_hash
from evaltally.report.section import GradeSettings, Section
from evaltally.report.tables import Table
from testkit import FAKE_KEY

TESTS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class CountOptions(BenchmarkOptions):
    items: int = 6
    timeout_s: float = 5.0
    broken: str = ""
    """An item whose prompt cannot be rendered (the benchmark raises)."""


def _json(text: str, path: str) -> ParseResult:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return ParseResult(ok=False, error=f"not JSON: {exc}")
    if not isinstance(value, dict):
        return ParseResult(ok=False, error="not a JSON object")
    return ParseResult(ok=True, value=value, path=path)


class ObserveJudge(Benchmark):
    kind = "observe_judge"
    roles = ("observer", "judge")
    Options = CountOptions

    def chains(self) -> Iterator[ChainTemplate]:
        for i in range(self.options.items):
            item = {"probe": i}
            yield ChainTemplate(
                f"p{i}", content_hash(item, 32), "", ({}, {}), roles=("observer", "judge")
            )

    def render(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
        if call.role == "observer":
            return [{"role": "user", "content": f"probe {call.item_id}: describe it"}]
        return [
            {
                "role": "user",
                "content": f"judge probe {call.item_id}; the observer answered: "
                f"<<{earlier[0].raw_text}>>",
            }
        ]

    def parse(self, call: PlannedCall, text: str) -> ParseResult:
        if call.role == "observer":
            return ParseResult(ok=True, value=text, path="observer-text")
        return _json(text, "judge-json")


class Verified(Benchmark):
    kind = "verified"
    Options = CountOptions

    def chains(self) -> Iterator[ChainTemplate]:
        for i in range(self.options.items):
            yield ChainTemplate(f"v{i}", content_hash({"v": i}, 32), "", ({},))

    def render(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
        if call.item_id == self.options.broken:
            raise RuntimeError(f"item {call.item_id} cannot be rendered")
        return [{"role": "user", "content": f"answer item {call.item_id}"}]

    def parse(self, call: PlannedCall, text: str) -> ParseResult:
        return _json(text, "json")

    def verification(self, call: PlannedCall, answer: StepAnswer) -> VerificationJob | None:
        args = {"item": call.item_id, "answer": answer.parsed}
        return VerificationJob("kinds_kit:check", args, timeout_s=self.options.timeout_s)


def check(args: dict[str, Any]) -> dict[str, Any]:
    """Runs in a worker process. Passed when the mock's answer id is even."""
    item = args["item"]
    if item == "v3":
        raise ValueError("no oracle for v3")
    if item == "v4":
        time.sleep(60)
    if item == "v5":
        os._exit(3)
    mock = str(args["answer"]["mock"])
    passed = int(mock, 16) % 2 == 0
    return {"verdict": "passed" if passed else "failed", "detail": {"mock": mock}}


class CountGrader:
    """Counts statuses and verdicts per (model, benchmark, role)."""

    legacy_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, row: dict[str, Any]) -> None:
        verdict = (row["verification"] or {}).get("status", "-")
        key = f"{row['model']}|{row['benchmark']}|{row['role']}|{row['status']}|{verdict}"
        self.counts[key] = self.counts.get(key, 0) + 1

    def section(self, settings: GradeSettings) -> Section:
        rows = [(*k.split("|"), str(n)) for k, n in sorted(self.counts.items())]
        header = ("model", "benchmark", "role", "status", "verdict", "calls")
        table = Table("Counts", header, rows, left=5)
        data = {"counts": dict(sorted(self.counts.items()))}
        return Section("Counts.", [table], data)


KINDS = (
    BenchmarkKind(
        "observe_judge", "Observe and judge", "kinds_kit:ObserveJudge", "kinds_kit:CountGrader"
    ),
    BenchmarkKind("verified", "Verified answers", "kinds_kit:Verified", "kinds_kit:CountGrader"),
)


def register_kinds() -> None:
    for kind in KINDS:
        register(kind)


def main() -> None:
    """`tally` with the test kinds registered."""
    register_kinds()
    from evaltally.cli import main as tally_main

    tally_main()


LAUNCH = ("-c", "import kinds_kit; kinds_kit.main()")


def env() -> dict[str, str]:
    """The environment of a `tally` subprocess that knows the test kinds."""
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "EVALTALLY_TEST_KEY": FAKE_KEY}


def tally_kinds(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `tally` with the test kinds registered, as a real subprocess."""
    return subprocess.run(
        [sys.executable, *LAUNCH, *args],
        env=env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
