"""The overview page's data: status counts per model (lane) and benchmark, attempts, spend,
the reasoning audit, the scores of scored benchmarks (view/scores.py), the run's state
(running, interrupted, finished) and, while a session drives the run, its progress and rate.

Counts come from `ledger.status` and spend from `audit`, the same code as `tally status`. That
aggregate reads the whole ledger (seconds on a million calls), so it is recomputed in the
background when the ledger changed (`ViewRun.latest`); liveness and the rate are read fresh on
every request with a few point lookups.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from evaltally.ledger.audit import audit_run
from evaltally.ledger.browse import (
    STATE_NOTES,
    finished_since,
    live_session,
    run_progress,
    session_state,
)
from evaltally.ledger.status import attempts_by_model, run_status
from evaltally.runner.lane_states import read_lane_states
from evaltally.view.runs import ViewRun
from evaltally.view.scores import live_scores

RATE_WINDOW_S = 60.0
# How long a request waits for the aggregate before answering with the previous one.
AGGREGATE_WAIT_S = 1.5
SCORES_WAIT_S = 0.5


def overview(run: ViewRun) -> dict[str, Any]:
    started = time.perf_counter()
    aggregate, counted_at, recounting = run.latest(
        "overview", lambda: _aggregate(run), AGGREGATE_WAIT_S
    )
    scores, _, scoring = run.latest("scores", lambda: live_scores(run), SCORES_WAIT_S)
    with run.read("read the run's progress") as conn:
        live = live_session(conn)
        recent = finished_since(conn, time.time() - RATE_WINDOW_S)
        state = session_state(conn)
        planned, finished = run_progress(conn)
    data: dict[str, Any] = {"run": run.name, "run_dir": str(run.run_dir), "totals": None}
    if aggregate is not None:
        data.update(aggregate)
    data.update(live=live, counted_at=counted_at, counting=recounting or scoring)
    data.update(state=state, state_note=STATE_NOTES[state], scores=scores)
    data["quick_progress"] = {"planned": planned, "done": finished}
    data["lanes_waiting"] = read_lane_states(run.run_dir) if live else {}
    data["elapsed_ms"] = (time.perf_counter() - started) * 1000.0
    if aggregate is None:
        return data
    totals = data["totals"]
    done = totals["planned"] - totals["unfinished"]
    rate = recent / RATE_WINDOW_S * 60.0
    data["progress"] = {
        "done": done,
        "planned": totals["planned"],
        "per_minute": rate,
        "eta_s": totals["unfinished"] / rate * 60.0 if rate > 0 and live else None,
    }
    return data


def _aggregate(run: ViewRun) -> dict[str, Any]:
    status = run_status(run.run_dir, probe_lock=False)
    attempts = attempts_by_model(run.run_dir)
    config = run.config()
    audits = {a.model: a for a in audit_run(run.run_dir, config)} if config else {}
    providers = {m.key: f"{m.provider} / {m.model}" for m in config.models} if config else {}
    lanes = []
    for model, counts in status.by_model.items():
        audit = audits.get(model)
        lanes.append(
            {
                "model": model,
                "provider": providers.get(model),
                "counts": asdict(counts),
                "attempts": asdict(attempts[model]) if model in attempts else None,
                "audit": audit.as_dict() if audit else None,
                "audit_message": audit.message() if audit and audit.flagged else None,
            }
        )
    cells = [
        {"model": model, "benchmark": bench, "counts": asdict(counts)}
        for model, by_bench in status.by_model_benchmark.items()
        for bench, counts in by_bench.items()
    ]
    return {
        "schema_version": status.schema_version,
        "sessions": status.sessions,
        "totals": asdict(status.overall),
        "tokens": {
            "input": status.input_tokens,
            "output": status.output_tokens,
            "reasoning": status.reasoning_tokens,
            "cached": status.cached_tokens,
        },
        "attempts": {
            "attempts": status.attempts,
            "retried": status.retried_attempts,
            "interrupted": status.interrupted_attempts,
        },
        "lanes": lanes,
        "cells": cells,
        "note": run.config_note,
    }


def run_summary(run: ViewRun) -> dict[str, Any]:
    """What the landing page lists for a run: its state and how far it got (two counts)."""
    with run.read("read the run's state") as conn:
        state = session_state(conn)
        planned, done = run_progress(conn)
    return {
        "name": run.name,
        "run_dir": str(run.run_dir),
        "state": state,
        "state_note": STATE_NOTES[state],
        "planned": planned,
        "done": done,
    }
