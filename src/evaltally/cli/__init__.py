"""`tally`, the command line (docs/cli.md). Each command is a thin shell over the library.

  startup.py      the entry point: start-up runs without the cyclic garbage collector
  root.py         the typer app and its commands, in the order `tally --help` lists them
  output.py       the consoles, the one error guard, the exit statuses
  options.py      the options several commands share, each declared once
  runs.py         plan, run, resume
  ledger.py       status, export, verify
  grading.py      grade, report, regrade
  view.py         view
  group.py        the root group: benchmarks' commands and mock-server, built when first used
  batch.py        what batch mode prints
  derived.py      runs built on another run (`tally fork`, `tally scae cte-judge`)
  mock_server.py  `tally mock-server` and `python -m evaltally.mockserver`

Only entry points import this package: itself, the benchmarks' `cli.py` and `__main__` modules
(tests/test_layout.py). Importing it loads no more than `startup` until a command line is read.
"""

from evaltally.cli.startup import main

__all__ = ["main"]
