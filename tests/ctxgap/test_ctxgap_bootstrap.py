"""The vectorized task-cluster bootstrap against a plain loop written from the documented
procedure (docs/ctxgap.md): same draws, statistics recomputed unit by unit, own percentile."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from evaltally.benchmarks.ctxgap.bootstrap import BLOCK
from evaltally.benchmarks.ctxgap.stats import Options, analyze
from evaltally.benchmarks.ctxgap.units import Unit, units_from_rows

VIEWS = ("U", "T")


def random_rows(n_tasks: int, seed: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out = []
    for t in range(n_tasks):
        for p in range(rnd.randint(1, 6)):
            category = rnd.choice("XYZ")
            importance = rnd.randint(0, 3)
            for view, bias in (("U", 0.3), ("T", 0.8)):
                r = rnd.random()
                ok = r > 0.1
                out.append(
                    {
                        "observer_model": "o",
                        "judge_model": "j",
                        "probe_id": f"t{t:02d}p{p}",
                        "task_id": f"t{t:02d}",
                        "checkpoint": "c",
                        "category": category,
                        "view": view,
                        "importance": importance,
                        "observer_status": "ok" if ok else "failed",
                        "judge_status": "ok" if ok else "blocked",
                        "verdict": rnd.choice((0, 0.5, 1) if r < bias else (0, 0)) if ok else None,
                    }
                )
    return out


def loop_draws(n: int, resamples: int, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    out: list[list[int]] = []
    while len(out) < resamples:
        block = rng.integers(0, n, size=(min(BLOCK, resamples - len(out)), n))
        out += block.tolist()
    return out


def weights(units: list[Unit]) -> dict[str, float]:
    probes: dict[str, set[str]] = {}
    atoms: dict[str, set[str]] = {}
    for u in units:
        probes.setdefault(u.category, set()).add(u.probe_id)
        if u.importance >= 2:
            atoms.setdefault(u.category, set()).add(u.task_id + "/" + u.atom_id)
    return {c: len(atoms.get(c, ())) / len(p) for c, p in probes.items()}


def task_sums(units: list[Unit], w: dict[str, float]) -> dict[str, dict[str, float]]:
    sums: dict[str, dict[str, float]] = {}
    for u in units:
        s = sums.setdefault(u.task_id, {"den": 0.0, "U": 0.0, "T": 0.0})
        s[u.view] += w[u.category] * (u.verdict or 0)  # null unless both steps are ok
        if u.view == "U":
            s["den"] += w[u.category]
    return {t: s for t, s in sums.items() if s["den"] > 0}


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    pos = q * (len(values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def loop_bootstrap(units: list[Unit], resamples: int, seed: int) -> dict[str, tuple[float, float]]:
    sums = task_sums(units, weights(units))
    tasks = sorted(sums)
    reps: dict[str, list[float]] = {"U": [], "T": [], "gap": [], "pooled_U": [], "pooled_T": []}
    for draw in loop_draws(len(tasks), resamples, seed):
        chosen = [sums[tasks[i]] for i in draw]
        acc = {v: sum(s[v] / s["den"] for s in chosen) / len(chosen) for v in VIEWS}
        reps["U"].append(acc["U"])
        reps["T"].append(acc["T"])
        reps["gap"].append(acc["T"] - acc["U"])
        den = sum(s["den"] for s in chosen)
        for v in VIEWS:
            reps[f"pooled_{v}"].append(sum(s[v] for s in chosen) / den)
    return {k: (percentile(v, 0.025), percentile(v, 0.975)) for k, v in reps.items()}


@pytest.mark.parametrize(("n_tasks", "resamples", "seed"), [(12, 10_000, 0), (5, 2_500, 7)])
def test_intervals_match_a_plain_loop(n_tasks: int, resamples: int, seed: int) -> None:
    units = units_from_rows(random_rows(n_tasks, seed=n_tasks))
    gap = analyze(units, Options(resamples=resamples, seed=seed))["bindings"][0]["gap"]
    expected = loop_bootstrap(units, resamples, seed)
    got = {
        "U": gap["accuracy"]["U"],
        "T": gap["accuracy"]["T"],
        "gap": gap["differences"][0],
        "pooled_U": gap["pooled"]["U"],
        "pooled_T": gap["pooled"]["T"],
    }
    for name, (low, high) in expected.items():
        assert (got[name]["ci_low"], got[name]["ci_high"]) == (
            pytest.approx(low, abs=1e-12),
            pytest.approx(high, abs=1e-12),
        ), name
    assert got["gap"]["ci_low"] < got["gap"]["value"] < got["gap"]["ci_high"]


def test_same_seed_same_interval_other_seed_other_interval() -> None:
    units = units_from_rows(random_rows(8, seed=3))

    def interval(seed: int) -> tuple[float, float]:
        d = analyze(units, Options(resamples=500, seed=seed))["bindings"][0]["gap"]["differences"][
            0
        ]
        return d["ci_low"], d["ci_high"]

    assert interval(0) == interval(0) != interval(1)


def test_no_resamples_no_interval() -> None:
    units = units_from_rows(random_rows(4, seed=1))
    d = analyze(units, Options(resamples=0))["bindings"][0]["gap"]["differences"][0]
    assert d["value"] is not None and d["ci_low"] is None and d["ci_high"] is None
