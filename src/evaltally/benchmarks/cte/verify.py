"""``tally cte replay DATA``: replay every scenario in the sandbox and compare with the record.

Compared per record: every response of ``trace_prefix``, ``trace_original`` and
``trace_counterfactual``, both final states, and (state interventions) the intervention's
``from_value`` against the value found after the history. A record that only matches when the
counterfactual responses are serialized after the run is reported as the release's known quirk
(9 ``cart`` records of Core-v1), not as a mismatch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .executor import ReplayResult
from .records import Scenario, json_equal, load_scenarios, unedited_sources
from .sandbox import Limits, replay_in_sandbox

Status = Literal["ok", "known_quirk", "mismatch", "error"]
QUIRK = "known quirk: counterfactual responses serialized after the run (release artefact)"


@dataclass(frozen=True)
class RecordCheck:
    """The verdict on one record; ``problems`` name fields, e.g. ``trace_original[3].response``."""

    item_id: str
    domain: str
    status: Status
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class VerifyReport:
    path: str
    checks: list[RecordCheck]

    @property
    def ok(self) -> bool:
        return all(c.status in ("ok", "known_quirk") for c in self.checks)

    def count(self, status: Status) -> int:
        return sum(c.status == status for c in self.checks)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def compare(sc: Scenario, res: ReplayResult) -> list[str]:
    """Field-level differences between a record and its replay (empty when identical)."""
    problems: list[str] = []
    traces = (
        ("trace_prefix", sc.prefix, res.prefix),
        ("trace_original", sc.original, res.original),
        ("trace_counterfactual", sc.counterfactual, res.counterfactual),
    )
    for name, stored, replayed in traces:
        if len(stored) != len(replayed):
            problems.append(f"{name}: {len(stored)} calls stored, {len(replayed)} replayed")
        for i, (call, got) in enumerate(zip(stored, replayed, strict=False)):
            if not json_equal(call.response, got):
                problems.append(
                    f"{name}[{i}].response: stored {_short(call.response)}, executor {_short(got)}"
                )
    for name, stored_state, got_state in (
        ("final_state_original", sc.final_state_original, res.final_state_original),
        ("final_state_cf", sc.final_state_cf, res.final_state_cf),
    ):
        if not json_equal(stored_state, got_state):
            keys = sorted(
                k
                for k in set(stored_state) | set(got_state)
                if not json_equal(stored_state.get(k), got_state.get(k))
            )
            problems.append(f"{name}: differs at {', '.join(keys) or '(keys)'}")
    iv = sc.intervention
    if not iv.is_source_edit and not json_equal(iv.from_value, res.found_from_value):
        problems.append(
            f"intervention.from_value: stored {_short(iv.from_value)}, "
            f"state after the history holds {_short(res.found_from_value)}"
        )
    return problems


def verify_scenarios(
    scenarios: Sequence[Scenario], *, path: str = "", limits: Limits | None = None
) -> VerifyReport:
    """Replay ``scenarios`` in the sandbox and check every stored field."""
    sources = unedited_sources(list(scenarios))
    outcomes = replay_in_sandbox(
        [s.raw for s in scenarios], unedited_sources=sources, limits=limits
    )
    checks: dict[str, RecordCheck] = {}
    retry: list[Scenario] = []
    for sc, out in zip(scenarios, outcomes, strict=True):
        if out.result is None:
            checks[sc.item_id] = RecordCheck(sc.item_id, sc.domain, "error", [str(out.error)])
            continue
        problems = compare(sc, out.result)
        if not problems:
            checks[sc.item_id] = RecordCheck(sc.item_id, sc.domain, "ok")
            continue
        checks[sc.item_id] = RecordCheck(sc.item_id, sc.domain, "mismatch", problems)
        if all(p.startswith(("trace_counterfactual[", "final_state_cf")) for p in problems):
            retry.append(sc)
    if retry:
        late = replay_in_sandbox(
            [s.raw for s in retry], unedited_sources=sources, late_serialization=True, limits=limits
        )
        for sc, out in zip(retry, late, strict=True):
            if out.result is not None and not compare(sc, out.result):
                n = len(checks[sc.item_id].problems)
                note = f"{QUIRK}; {n} field(s) differ from call-time values"
                checks[sc.item_id] = RecordCheck(sc.item_id, sc.domain, "known_quirk", [note])
    return VerifyReport(path=path, checks=[checks[s.item_id] for s in scenarios])


def verify_file(path: str | Path, *, limits: Limits | None = None) -> VerifyReport:
    """Read ``path`` strictly (``DataError`` on a malformed record) and verify every record."""
    return verify_scenarios(load_scenarios(path), path=str(path), limits=limits)


def render(report: VerifyReport, *, max_problems: int = 8) -> list[str]:
    """Human-readable lines: one per mismatching/quirk record, then a summary."""
    lines: list[str] = []
    for c in report.checks:
        if c.status == "ok":
            continue
        lines.append(f"{c.status.upper():<11} {c.item_id} ({c.domain})")
        for p in c.problems[:max_problems]:
            lines.append(f"    {p}")
        if len(c.problems) > max_problems:
            lines.append(f"    ... and {len(c.problems) - max_problems} more")
    lines.append(
        f"{report.path}: {len(report.checks)} records: {report.count('ok')} ok, "
        f"{report.count('known_quirk')} known quirk, {report.count('mismatch')} mismatch, "
        f"{report.count('error')} failed to run"
    )
    return lines
