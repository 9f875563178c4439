"""`tally`, the command line (docs/cli.md). Each command is a thin shell over the library.

  entry.py        the entry point (`tally`, `python -m evaltally`)
  startup.py      start-up runs without the cyclic garbage collector
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
  kinds.py        what a benchmark's own commands (benchmarks/<kind>/cli.py) take from here

Only entry points import this package: itself, the benchmarks' `cli.py` (through kinds.py) and
`__main__` modules (tests/test_layout.py). Importing it loads no more than `entry` and `startup`
until a command line is read.
"""

from evaltally.cli.entry import main

__all__ = ["main"]
