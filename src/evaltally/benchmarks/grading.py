"""Grade an export file: rows go to the grader of their benchmark kind, each kind returns its
report section, and the report adds what is common (reasoning-token audit, data sources).

Both `tally grade EXPORT` and `tally report RUN` end here; `report` only exports first. The
JSON written is the complete result; each section's data is what the two commands must agree
on exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaltally.benchmarks.registry import get_kind, kind_names
from evaltally.errors import DataError
from evaltally.ledger.audit import reasoning_against_request
from evaltally.ledger.export_formats import read_export
from evaltally.report.files import markdown, write_report
from evaltally.report.section import Grader, GradeSettings, Section

REPORT_VERSION = 2


@dataclass
class ReportResult:
    data: dict[str, Any]
    sections: list[tuple[str, Section]]
    """(heading, section) per benchmark kind, in registry order."""
    audit: list[str]
    markdown: str
    files: list[Path] = field(default_factory=list)

    def section(self, kind: str) -> dict[str, Any]:
        """The JSON data of one kind's section."""
        return dict(self.data["sections"][kind])


def reasoning_audit(used: Mapping[str, int], requested: Mapping[str, str] | None) -> list[str]:
    """One line per model that used reasoning tokens; louder when its config said 'off'."""
    lines = []
    for model, tokens in sorted(used.items()):
        if tokens <= 0:
            continue
        mode = (requested or {}).get(model)
        if reasoning_against_request(mode, tokens):
            lines.append(
                f'WARNING {model}: reasoning = "off" in the run\'s config, but the API reported '
                f"{tokens:,} reasoning tokens; its numbers are not a no-reasoning result"
            )
        else:
            lines.append(
                f"{model}: {tokens:,} reasoning tokens reported (requested mode: "
                f"{mode or 'unknown'})"
            )
    return lines


class _Rows:
    """Export rows dispatched to their kind's grader, and the totals every report shows."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.graders: dict[str, Grader] = {}
        self.reasoning: dict[str, int] = {}
        self.not_graded = 0
        self.kinds = kind_names()
        self._legacy: list[tuple[str, tuple[str, ...]]] | None = None

    def kind_of(self, row: dict[str, Any]) -> str | None:
        kind = row.get("benchmark_kind")
        if isinstance(kind, str):
            return kind if kind in self.kinds else None
        # An export of a release before benchmark_kind: the kind whose fields the row has.
        if self._legacy is None:
            fields = ((k, get_kind(k).grader_class().legacy_fields) for k in self.kinds)
            self._legacy = [(k, f) for k, f in fields if f]
        return next((k for k, f in self._legacy if all(x in row for x in f)), None)

    def add(self, lineno: int, row: dict[str, Any]) -> None:
        kind = self.kind_of(row)
        if kind is None:
            self.not_graded += 1
            return
        grader = self.graders.get(kind)
        if grader is None:
            grader = self.graders[kind] = get_kind(kind).grader_class()()
        try:
            grader.add(row)
            usage = row.get("usage") or {}
            model = str(row["model"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DataError(f"{self.path}: row {lineno}: malformed {kind} row ({exc!r})") from None
        self.reasoning[model] = self.reasoning.get(model, 0) + int(
            usage.get("reasoning_tokens") or 0
        )


def grade_export(
    export: Path,
    out_dir: Path | None = None,
    *,
    requested_reasoning: Mapping[str, str] | None = None,
    resamples: int | None = None,
    seed: int = 0,
    plot: bool = True,
    data_sources: Mapping[str, Any] | None = None,
) -> ReportResult:
    """Grade every row of `export` by its kind; write report files into `out_dir` if given.
    `data_sources` (benchmark label -> kind and files with SHA-256, as the run recorded them)
    is shown when known. `resamples` None: each kind's own default (`BenchmarkKind.resamples`)."""
    rows = _Rows(Path(export))
    for lineno, row in enumerate(read_export(Path(export)), 1):
        rows.add(lineno, row)
    if not rows.graders:
        raise DataError(
            f"{export}: no gradable rows (rows need the fields of docs/export.md, including "
            "benchmark_kind)"
        )
    kinds = [k for k in kind_names() if k in rows.graders]
    sections = [
        (
            get_kind(k).title,
            rows.graders[k].section(
                GradeSettings(
                    resamples=get_kind(k).resamples if resamples is None else resamples, seed=seed
                )
            ),
        )
        for k in kinds
    ]
    audit = reasoning_audit(rows.reasoning, requested_reasoning)
    data: dict[str, Any] = {
        "report_version": REPORT_VERSION,
        "sections": {
            k: {"title": title, **s.data} for k, (title, s) in zip(kinds, sections, strict=True)
        },
        "data_sources": dict(data_sources or {}),
        "reasoning_tokens": dict(sorted(rows.reasoning.items())),
        "reasoning_audit": audit,
        "rows_not_graded": rows.not_graded,
    }
    result = ReportResult(data, sections, audit, markdown(sections, audit, data))
    if out_dir is not None:
        result.files = write_report(result.data, result.markdown, sections, Path(out_dir), plot)
    return result
