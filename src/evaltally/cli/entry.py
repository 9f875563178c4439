"""`tally` (and `python -m evaltally`): the command line, imported with the cyclic garbage
collector already off (cli/startup.py)."""

from __future__ import annotations

from evaltally.cli.startup import begin


def main() -> None:
    begin()
    from evaltally.cli.root import main as run

    run()
