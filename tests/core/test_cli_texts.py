"""Texts the command line shows: help that renders config syntax as written, and tables with
a header on every column."""

from __future__ import annotations

from evaltally.cli.batch import rounds_table
from testkit import tally


def test_cte_judge_help_shows_the_models_tables_as_written() -> None:
    done = tally("scae", "cte-judge", "--help", env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "whose [[models]] are the judges" in done.stdout


def test_the_batch_rounds_table_names_every_column() -> None:
    table = rounds_table(
        [
            {
                "model": "m",
                "round": 1,
                "batches": 2,
                "requests": 10,
                "answered_share": 1.0,
                "wall_s": 3.0,
                "open": False,
            }
        ]
    )
    headers = [str(c.header) for c in table.columns]
    assert all(headers) and headers[-1] == "state"
