"""A run, above the runner: opening it (keys, run directory, ledger, config copy, plan:
open.py) and driving one session of it to its outcomes (session.py). The runner below
schedules and sends calls; it never imports this package (tests/test_layout.py)."""
