"""What a benchmark kind's own commands (benchmarks/<kind>/cli.py) take from the command line,
in one import: the error guard and consoles (output.py), the shared options (options.py), runs
built on another run (derived.py), the calls a config plans (planned.py) and `tally plan` for a
run they write. The command line mounts those commands (group.py); this is the only module of it
they import (tests/test_layout.py).
"""

from evaltally.cli import options
from evaltally.cli.derived import derived_run_dir, model_tables, start_derived_run
from evaltally.cli.output import err, guard, out
from evaltally.cli.planned import planned_calls
from evaltally.cli.runs import plan

__all__ = [
    "derived_run_dir",
    "err",
    "guard",
    "model_tables",
    "options",
    "out",
    "plan",
    "planned_calls",
    "start_derived_run",
]
