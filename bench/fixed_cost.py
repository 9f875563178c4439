"""Where the fixed cost of a one-call `tally run` goes, from the run's own ledger timestamps.

For each repetition, against the mock provider (its own process, 127.0.0.1, 0 ms latency):

  interpreter    `python -c pass`
  imports        `python -c "import evaltally.cli.root, evaltally.run.session"` minus interpreter
  run            a whole `tally run` of one call, split at the ledger's own timestamps:
    to_ledger      process start -> session start row (interpreter, imports, config, ledger file)
    to_first_send  -> first attempt start (plan write, resume bookkeeping, lanes, first pacing)
    request        -> that attempt's end (one HTTP round trip to the mock)
    to_close       -> session end row (outcome, writer's last batch, meta, close)
    to_exit        -> process exit (end-of-run summary, interpreter shutdown)

Target (issue 14): a one-call run in at most 0.5 s. Medians of --reps.

Usage: .venv/bin/python bench/fixed_cost.py [--reps 5]
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from _common import (
    PYTHON,
    children_cpu,
    median,
    mock_process,
    run_timed,
    save,
    table,
    workdir,
    write_config,
    write_items,
)

PHASES = ("to_ledger", "to_first_send", "request", "to_close", "to_exit")


def ledger_marks(run_dir: Path) -> tuple[float, float, float, float]:
    db = sqlite3.connect(f"file:{run_dir / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        (opened,) = db.execute("SELECT min(at) FROM sessions WHERE kind = 'start'").fetchone()
        (closed,) = db.execute("SELECT max(at) FROM sessions WHERE kind = 'end'").fetchone()
        (sent,) = db.execute("SELECT min(at) FROM attempts WHERE kind = 'start'").fetchone()
        (back,) = db.execute("SELECT max(at) FROM attempts WHERE kind = 'end'").fetchone()
    finally:
        db.close()
    return opened, sent, back, closed


def one_rep(rep: int, base_url: str, wd: Path, one: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"rep": rep}
    out["interpreter_s"], _ = run_timed([PYTHON, "-c", "pass"], timeout=60)
    imports = "import evaltally.cli.root, evaltally.run.session"
    wall, _ = run_timed([PYTHON, "-c", imports], timeout=60)
    out["imports_s"] = wall - out["interpreter_s"]
    cfg = write_config(wd, base_url, one, name=f"one{rep}", concurrency=64)
    cpu0 = children_cpu()
    t0 = time.time()
    out["run_s"], _ = run_timed([PYTHON, "-m", "evaltally", "run", str(cfg)], timeout=120)
    # CPU seconds of the run process: less sensitive than wall time to other jobs' load.
    out["run_cpu_s"] = children_cpu() - cpu0
    t_exit = t0 + out["run_s"]
    opened, sent, back, closed = ledger_marks(wd / "runs" / f"one{rep}")
    marks = (t0, opened, sent, back, closed, t_exit)
    for name, a, b in zip(PHASES, marks, marks[1:], strict=False):
        out[name] = b - a
    shutil.rmtree(wd / "runs", ignore_errors=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    wd = workdir("fixed")
    one = write_items(wd / "one.jsonl", 1)
    rows: list[dict[str, Any]] = []
    try:
        with mock_process(workdir=wd) as mock:
            for rep in range(args.reps):
                rows.append(one_rep(rep, mock.base_url, wd, one))
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    keys = ["run_s", "run_cpu_s", *PHASES, "interpreter_s", "imports_s"]
    med = {k: median([r[k] for r in rows]) for k in keys}
    print(
        table(
            [[r["rep"], *(r[k] for k in keys)] for r in rows] + [["median", *med.values()]],
            ["rep", *keys],
        )
    )
    met = med["run_s"] <= 0.5
    print(f"one-call run {med['run_s']:.3f} s: target <= 0.5 s: {'MET' if met else 'MISSED'}")
    save("fixed_cost", {"reps": rows, "median": med, "target": "run_s <= 0.5", "met": met})


if __name__ == "__main__":
    main()
