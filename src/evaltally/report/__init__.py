"""What every benchmark's report shares: tables, figures, bootstrap helpers, report files.

Grading an export by benchmark kind (`tally report RUN`, `tally grade EXPORT`) lives beside the
kinds, in benchmarks/grading.py; each kind's grader lives in its benchmark folder.
"""
