"""`tally`'s typer app: the root commands, registered here in the order `tally --help` lists
them (each defined in its group's module), and `main`, the process around the app."""

from __future__ import annotations

import os
import sys
from typing import TextIO, cast

import typer

from evaltally.cli.check import check
from evaltally.cli.grading import grade, regrade, report
from evaltally.cli.group import RootGroup
from evaltally.cli.ledger import export, status, verify
from evaltally.cli.runs import plan, resume, run
from evaltally.cli.startup import begin
from evaltally.cli.view import view
from evaltally.redact import RedactingStream

app = typer.Typer(
    cls=RootGroup,
    help="Plan-first LLM evaluation sweeps with an append-only ledger and exact resume.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from evaltally import __version__

        print(f"evaltally {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Plan-first LLM evaluation sweeps with an append-only ledger and exact resume."""


for command in (plan, check, run, resume, status, export, verify, grade, report, regrade, view):
    app.command()(command)


def main() -> None:
    # Parsing the command line runs without the cyclic garbage collector, until the command's
    # work begins: `guard`, or a mounted command when it is built (cli/group.py, cli/startup.py).
    begin()
    # Everything this process prints, tracebacks included, passes redaction (evaltally.redact).
    sys.stdout = cast(TextIO, RedactingStream(sys.stdout))
    sys.stderr = cast(TextIO, RedactingStream(sys.stderr))
    try:
        app()
    except SystemExit as done:
        if sys.getprofile() is not None or sys.gettrace() is not None:
            raise  # a profiler or coverage tool writes its data at exit
        # The command has finished: ledgers are closed, temporary directories removed (every
        # one is a `with` block). Skip the interpreter's teardown of every loaded module and
        # object, which took a one-call `tally run` 0.1-0.5 s (bench/fixed_cost.py).
        code = done.code
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code if isinstance(code, int) else int(code is not None))
