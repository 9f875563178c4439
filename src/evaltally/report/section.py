"""What a benchmark's grader hands the report: one section of tables, figures and JSON.

A kind's grader (`BenchmarkKind.grader`, a class) is fed the export rows of its kind one by
one (plain dicts, docs/export.md) and then asked for its `Section`; every number in it must
come from those rows alone, so `tally grade EXPORT` and `tally report RUN` agree exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from evaltally.report.tables import Table


@dataclass(frozen=True)
class GradeSettings:
    resamples: int = 2000
    """Bootstrap resamples for intervals (0: point values only)."""
    seed: int = 0
    level: float = 0.95


@dataclass(frozen=True)
class Figure:
    filename: str
    """A file name in the report directory; prefix it with the kind to stay unique."""
    caption: str
    draw: Callable[[Path], Path]
    """Writes the PNG to the given path and returns it."""


@dataclass
class Section:
    """One benchmark kind's part of the report (its heading is the kind's registry title)."""

    intro: str
    """A markdown paragraph under the heading: what the numbers mean and how intervals are
    drawn."""
    tables: list[Table]
    data: dict[str, Any]
    """The complete result as JSON (report.json holds it under `sections.<kind>`)."""
    figures: list[Figure] = field(default_factory=list)


class Grader(Protocol):
    legacy_fields: ClassVar[tuple[str, ...]]
    """Rows without `benchmark_kind` (exports of older releases) that carry all of these
    fields belong to this kind; empty: none do."""

    def add(self, row: dict[str, Any]) -> None:
        """Take one export row of this kind (raise KeyError/TypeError/ValueError when it is
        malformed; the report names the row)."""

    def section(self, settings: GradeSettings) -> Section: ...
