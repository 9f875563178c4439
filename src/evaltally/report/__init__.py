"""`tally report RUN` and `tally grade EXPORT`: every benchmark's section from an export alone.

`report` exports the run to a temporary file and grades that file, so both commands compute
the same numbers by construction. This package holds only what every benchmark shares (tables,
figures, bootstrap helpers, files); each kind's grader lives in its benchmark folder.
"""

from evaltally.report.build import ReportResult, grade_export

__all__ = ["ReportResult", "grade_export"]
