"""Paired task-cluster bootstrap of weighted accuracies (seed 003: probes within one task are
not independent; resample tasks and keep every probe's views together).

Per task t and view v the data reduce to two sums over the task's probes: `num[t, v] =
Σ w_i s_i(v)` and `den[t] = Σ w_i` (the same for every view: the probe set is paired). Then

- equal-task accuracy `A(v) = mean_t num[t, v] / den[t]` (every task weighs the same);
- pooled accuracy `P(v) = Σ_t num[t, v] / Σ_t den[t]` (every probe weight counts once).

Resampling, so a third party can reproduce every interval: tasks sorted by id;
`rng = numpy.random.default_rng(seed)`; resamples are drawn in blocks of `BLOCK` as
`rng.integers(0, n_tasks, size=(block, n_tasks))` (the last block shorter), one row per
resample, each row a draw of tasks with replacement; the statistic is recomputed per row, with
the same draw for every view (so differences between views are paired); the interval is the
percentile interval with linear interpolation (`numpy.percentile`'s default).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]
#: Resamples drawn per block: bounds memory at BLOCK x tasks x views floats.
BLOCK = 1000


@dataclass(frozen=True)
class Clusters:
    """Per-task sums of one analysis; rows are tasks sorted by id, columns views."""

    tasks: tuple[str, ...]
    views: tuple[str, ...]
    num: Array
    """(tasks, views): Σ w_i s_i(v) over the task's probes."""
    den: Array
    """(tasks,): Σ w_i over the task's probes; positive for every task kept."""

    def equal_task(self) -> Array:
        return equal_task(self.num, self.den)

    def pooled(self) -> Array:
        return pooled(self.num, self.den)


def equal_task(num: Array, den: Array) -> Array:
    """Mean over tasks (axis -2) of per-task accuracy; `num` may carry leading resample axes."""
    result: Array = (num / den[..., None]).mean(axis=-2)
    return result


def pooled(num: Array, den: Array) -> Array:
    result: Array = num.sum(axis=-2) / den.sum(axis=-1)[..., None]
    return result


def draws(n_tasks: int, resamples: int, seed: int) -> Iterator[npt.NDArray[np.int64]]:
    """Blocks of resampled task indices, one row per resample (see the module docstring)."""
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, BLOCK):
        yield rng.integers(0, n_tasks, size=(min(BLOCK, resamples - start), n_tasks))


@dataclass(frozen=True)
class Resamples:
    """Bootstrap replicates, one row per resample, one column per view."""

    equal_task: Array
    pooled: Array


def resample(clusters: Clusters, resamples: int, seed: int) -> Resamples:
    n_views = len(clusters.views)
    if resamples == 0 or not clusters.tasks:
        empty = np.empty((0, n_views))
        return Resamples(empty, empty)
    eq, pool = [], []
    for idx in draws(len(clusters.tasks), resamples, seed):
        num, den = clusters.num[idx], clusters.den[idx]
        eq.append(equal_task(num, den))
        pool.append(pooled(num, den))
    return Resamples(np.concatenate(eq), np.concatenate(pool))


def interval(samples: Array, level: float) -> tuple[float | None, float | None]:
    """Percentile interval of a 1-d array of replicates; (None, None) without replicates."""
    if samples.size == 0:
        return None, None
    alpha = 100 * (1 - level) / 2
    low, high = np.percentile(samples, [alpha, 100 - alpha])
    return float(low), float(high)


def cell(value: float | None, samples: Array, level: float) -> dict[str, float | None]:
    """A reported value with its interval (the shape report tables read)."""
    low, high = interval(samples, level) if value is not None else (None, None)
    return {"value": value, "ci_low": low, "ci_high": high}
