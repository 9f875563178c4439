"""One judge call as the statistics read it, and the pairing of the two conditions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evaltally.errors import DataError

from .conditions import CONDITIONS, FULL, PREFIX
from .parse import OK, OUT_OF_RANGE, UNPARSABLE
from .provenance import StepProvenance

#: Judge statuses: the three parse outcomes plus the ledger's no-answer outcomes.
STATUSES = (OK, OUT_OF_RANGE, UNPARSABLE, "failed", "blocked", "unfinished")


@dataclass(frozen=True)
class JudgeRow:
    """One planned judge call: `step` is the blamed step (1-based) when `status` is `ok`;
    `provenance` has one entry per step of the episode (empty when the episode has no gold set,
    as for CTE free rollouts)."""

    episode_id: str
    judge: str
    condition: str
    status: str
    step: int | None
    total_steps: int
    visible_steps: int
    provenance: tuple[StepProvenance, ...] = ()

    def __post_init__(self) -> None:
        problem = self._problem()
        if problem:
            raise DataError(
                f"judge row (episode {self.episode_id}, judge {self.judge}, condition "
                f"{self.condition}): {problem}"
            )

    def _problem(self) -> str | None:
        if self.condition not in CONDITIONS:
            return f"unknown condition {self.condition!r}"
        if self.status not in STATUSES:
            return f"unknown status {self.status!r}; known: {', '.join(STATUSES)}"
        if not 1 <= self.visible_steps <= self.total_steps:
            return f"{self.visible_steps} visible steps of {self.total_steps}"
        if self.condition == FULL and self.visible_steps != self.total_steps:
            return "the full condition shows every step"
        if self.provenance and len(self.provenance) != self.total_steps:
            return f"{len(self.provenance)} provenance entries for {self.total_steps} steps"
        if (self.status == OK) != (self.step is not None):
            return "a step is given exactly when the status is ok"
        if self.step is not None and not 1 <= self.step <= self.visible_steps:
            return f"step {self.step} outside the visible steps 1-{self.visible_steps}"
        return None

    @property
    def position(self) -> float:
        """pos = t / T, normalized by the whole trajectory's length in both conditions."""
        if self.step is None:
            raise ValueError("no blamed step")
        return self.step / self.total_steps


@dataclass(frozen=True, slots=True)
class Pair:
    """One episode where the judge answered in both conditions."""

    episode_id: str
    total_steps: int
    full: int
    prefix: int
    prefix_visible: int
    """k, the steps the prefix condition showed."""

    @property
    def displacement(self) -> float:
        """pos(full) - pos(prefix)."""
        return (self.full - self.prefix) / self.total_steps

    @property
    def uniform_null(self) -> float:
        """The displacement expected of a judge picking uniformly among the visible steps:
        E[pos full] - E[pos prefix] = (T + 1)/2T - (k + 1)/2T = (T - k)/2T (0.20 at T = 20,
        k = 12): not zero, since the prefix judge cannot reach the later steps."""
        return (self.total_steps - self.prefix_visible) / (2 * self.total_steps)


def by_episode(rows: Iterable[JudgeRow]) -> dict[str, dict[str, JudgeRow]]:
    """episode -> condition -> row; one judge's rows only, each (episode, condition) once."""
    out: dict[str, dict[str, JudgeRow]] = {}
    for r in rows:
        slot = out.setdefault(r.episode_id, {})
        if r.condition in slot:
            raise DataError(
                f"judge {r.judge}: episode {r.episode_id} has two {r.condition} rows "
                "(one judge call per episode and condition is expected)"
            )
        slot[r.condition] = r
    return out


def pairs(rows: Iterable[JudgeRow]) -> list[Pair]:
    """Episodes answered `ok` in both conditions, sorted by episode id."""
    out = []
    for eid, cond in sorted(by_episode(rows).items()):
        full, prefix = cond.get(FULL), cond.get(PREFIX)
        if full and prefix and full.step is not None and prefix.step is not None:
            if full.total_steps != prefix.total_steps:
                raise DataError(
                    f"judge {full.judge}: episode {eid}: {full.total_steps} steps in the full "
                    f"condition, {prefix.total_steps} in the prefix condition"
                )
            out.append(Pair(eid, full.total_steps, full.step, prefix.step, prefix.visible_steps))
    return out


def answered(rows: Sequence[JudgeRow], condition: str) -> list[JudgeRow]:
    """The `ok` rows of one condition, sorted by episode id."""
    return sorted(
        (r for r in rows if r.condition == condition and r.status == OK),
        key=lambda r: r.episode_id,
    )


def mean_positions(rows: Iterable[JudgeRow]) -> dict[str, float | None]:
    """condition -> mean pos over every `ok` answer of that condition (paired or not)."""
    positions: dict[str, list[float]] = {c: [] for c in CONDITIONS}
    for r in rows:
        if r.step is not None:
            positions[r.condition].append(r.position)
    return {c: sum(v) / len(v) if v else None for c, v in positions.items()}


def status_counts(rows: Iterable[JudgeRow]) -> dict[str, dict[str, int]]:
    """condition -> status -> count (every status listed, zeros included)."""
    out = {c: dict.fromkeys(STATUSES, 0) for c in CONDITIONS}
    for r in rows:
        out[r.condition][r.status] += 1
    return out
