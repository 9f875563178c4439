"""What every `tally` command prints through: the consoles, the one error guard and the exit
statuses (docs/cli.md). Root commands, every benchmark's sub-commands and `tally mock-server`
use these, so an error reads and exits alike whichever command raised it.

Exit statuses:
  0  every planned call ended ok or parse_error (or the command succeeded)
  2  bad input: config, data, credentials, a locked or mismatched run, a lost ledger
  3  the run is incomplete: some calls failed or are blocked, or the ledger could not be
     written (disk full); `tally resume RUN` continues it
  4  `tally verify` found a violated ledger invariant (tampering or corruption)
  5  `tally verify`: the history is intact but the last process did not close it (killed,
     full disk); `tally resume RUN` continues the run
  130 interrupted (Ctrl-C or SIGTERM); `tally resume RUN` continues it
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.text import Text

from evaltally.cli.startup import end
from evaltally.errors import EvaltallyError
from evaltally.terminal import VisibleConsole

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3
EXIT_VERIFY_FAILED = 4
EXIT_VERIFY_INTERRUPTED = 5
EXIT_INTERRUPTED = 130

# Markup off: provider messages, model keys (`gpt-4o[t=0]`) and item ids are printed as text,
# never interpreted; the few styled labels are built as Text (`labelled`).
out = VisibleConsole(
    soft_wrap=True, width=None if sys.stdout.isatty() else 200, markup=False, highlight=False
)
err = VisibleConsole(stderr=True, soft_wrap=True, markup=False, highlight=False)

T = TypeVar("T")


def labelled(label: str, style: str, text: str) -> Text:
    """`label` styled, then untrusted `text` as plain text."""
    return Text.assemble((label, style), text)


def guard(
    fn: Callable[[], T], *, resumable: bool = False, run_dir: Callable[[], Any] | None = None
) -> T:
    """Turn our errors into one clear line on stderr and the documented exit status; a
    `resumable` command's interruption says how to continue the run (naming the run directory
    `run_dir()` gives, once it is known)."""
    end()
    try:
        return fn()
    except EvaltallyError as exc:
        err.print(labelled("error: ", "bold red", str(exc)))
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        where = run_dir() if run_dir is not None else None
        target = shlex.quote(str(where)) if where is not None else "RUN"
        advice = f"; continue with `tally resume {target}`" if resumable else ""
        err.print(f"interrupted{advice}")
        raise typer.Exit(EXIT_INTERRUPTED) from None


def command_line() -> str:
    """The command as the user typed it, recorded with each session."""
    return "tally " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def verdict_counts(counts: dict[str, int]) -> str:
    """`passed N, failed N, error N`: the verification verdicts of a session or a regrade."""
    return ", ".join(
        f"{status} {counts.get(status, 0)}" for status in ("passed", "failed", "error")
    )
