"""Report pieces: CTE-Bench grading of an export (`build`, `collect`), tables, plots and the
shared bootstrap. `tally report RUN` exports the run to a temporary file and grades that file,
so `report` and `tally grade EXPORT` compute the same numbers by construction
(docs/cte-protocols.md, "Report"). Import the submodules directly: this package imports
nothing, so a grader may use `report.bootstrap` without pulling in the CTE report."""
