"""What a judge is asked about: one trajectory with its rubric, per-step gold provenance and
oracle fields. Episodes come from an episode file (`episode_items`); CTE free rollouts from a
recorded run (`cte_source.py`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaltally.records import content_hash

from .conditions import BLAME_RUBRIC, Trajectory, episode_trajectory
from .episodes import Episode
from .provenance import StepProvenance, episode_provenance

EPISODES = "episodes"
CTE_ROLLOUTS = "cte_rollouts"


@dataclass(frozen=True)
class JudgeItem:
    id: str
    trajectory: Trajectory
    rubric: str
    item_hash: str
    """Content hash of everything the judge is shown and scored on: an edited episode gets new
    call ids."""
    source: str
    """EPISODES or CTE_ROLLOUTS."""
    provenance: tuple[StepProvenance, ...] = ()
    """Per step, what it did with the gold set (episodes only)."""
    fields: Mapping[str, Any] = field(default_factory=dict)
    """Oracle fields of this source for the export (repository; certified first wrong call)."""

    @property
    def total_steps(self) -> int:
        return len(self.trajectory.steps)


def episode_items(episodes: Sequence[Episode]) -> list[JudgeItem]:
    out = []
    for e in episodes:
        content = {k: v for k, v in dataclasses.asdict(e).items() if k not in ("source", "line")}
        out.append(
            JudgeItem(
                id=e.id,
                trajectory=episode_trajectory(e),
                rubric=BLAME_RUBRIC,
                item_hash=content_hash(content, 32),
                source=EPISODES,
                provenance=episode_provenance(e),
                fields={"repository": e.repository, "success": e.outcome.success},
            )
        )
    return out
