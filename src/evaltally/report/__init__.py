"""`tally report RUN` and `tally grade EXPORT`: CTE-Bench metrics from an export file alone.

`report` exports the run to a temporary file and grades that file, so both commands compute
the same numbers by construction (docs/cte-protocols.md, "Report").
"""

from evaltally.report.build import ReportResult, grade_export

__all__ = ["ReportResult", "grade_export"]
