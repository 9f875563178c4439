"""The two judge conditions and the prefix rule (docs/scae.md, "Judge conditions").

- `full`: the judge sees all T steps and the outcome;
- `prefix`: the judge sees the first k = max(1, floor(f * T)) steps and no outcome, with the
  fraction f fixed in advance (default 0.6) and computed exactly on f's decimal value, so 0.6
  is 3/5 and 0.6 * 5 gives 3, not 2.

k depends on T and f only — never on an estimate or on the step being scored. The paper's
pre-registration record (appendix D.2) explains why: truncating just before an estimated step
caps the prefix judge's reachable positions below the comparison point and produces a positive
displacement even when seeing later steps changes nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from evaltally.prompts import scae as prompts
from evaltally.records import Message

from .episodes import Episode

FULL = "full"
PREFIX = "prefix"
CONDITIONS = (FULL, PREFIX)
DEFAULT_FRACTION = Fraction(3, 5)
BLAME_RUBRIC = "blame-v1"


def exact_fraction(fraction: Fraction | float | str) -> Fraction:
    """f as an exact rational in (0, 1); a float is read by its shortest decimal form."""
    if isinstance(fraction, bool):
        raise ValueError("the prefix fraction must be a number in (0, 1), got a boolean")
    try:
        value = Fraction(str(fraction)) if isinstance(fraction, float) else Fraction(fraction)
    except (ValueError, ZeroDivisionError) as exc:
        raise ValueError(f"the prefix fraction must be a number in (0, 1): {exc}") from None
    if not 0 < value < 1:
        raise ValueError(f"the prefix fraction must be in (0, 1), got {fraction}")
    return value


def prefix_length(total_steps: int, fraction: Fraction | float | str = DEFAULT_FRACTION) -> int:
    """k = max(1, floor(f * T)): how many leading steps the prefix condition shows."""
    if total_steps < 1:
        raise ValueError(f"a trajectory has at least one step, got {total_steps}")
    return max(1, math.floor(exact_fraction(fraction) * total_steps))


def visible_steps(
    total_steps: int, condition: str, fraction: Fraction | float | str = DEFAULT_FRACTION
) -> int:
    if condition == FULL:
        return total_steps
    if condition == PREFIX:
        return prefix_length(total_steps, fraction)
    raise ValueError(f"unknown condition {condition!r}; known: {', '.join(CONDITIONS)}")


@dataclass(frozen=True)
class JudgeStep:
    tool: str
    target: str | None
    output: str


@dataclass(frozen=True)
class Trajectory:
    """What a judge may be shown of one trajectory: plain text, whatever its origin."""

    id: str
    task: str
    steps: tuple[JudgeStep, ...]
    outcome: str


def judge_messages(
    trajectory: Trajectory,
    condition: str,
    *,
    rubric: str,
    fraction: Fraction | float | str = DEFAULT_FRACTION,
    version: str = prompts.PROMPT_VERSION,
) -> list[Message]:
    """The request of one judge call: the rubric is the same in both conditions; only the
    visible steps and the outcome differ."""
    total = len(trajectory.steps)
    shown = trajectory.steps[: visible_steps(total, condition, fraction)]
    return prompts.render(
        rubric=rubric,
        task=trajectory.task,
        steps=[{"tool": s.tool, "target": s.target, "output": s.output} for s in shown],
        total_steps=total,
        outcome=trajectory.outcome if condition == FULL else None,
        version=version,
    )


def outcome_text(episode: Episode) -> str:
    """The realized outcome as the full-trace judge reads it (never the gold set itself)."""
    o = episode.outcome
    parts = [
        "The task succeeded: the agent's final answer contains every file the reference fix "
        "changes."
        if o.success
        else "The task failed: the agent's final answer misses at least one file the reference "
        "fix changes."
    ]
    if o.recall is not None:
        parts.append(f"Recall over the reference files: {o.recall:.2f}.")
    if o.answer is not None:
        parts.append("Final answer: " + (", ".join(o.answer) if o.answer else "(no files)") + ".")
    return " ".join(parts)


def episode_trajectory(episode: Episode) -> Trajectory:
    return Trajectory(
        id=episode.id,
        task=f"Repository: {episode.repository}\nIssue:\n{episode.task}",
        steps=tuple(JudgeStep(s.tool, s.target, s.output) for s in episode.steps),
        outcome=outcome_text(episode),
    )


def episode_messages(
    episode: Episode, condition: str, fraction: Fraction | float | str = DEFAULT_FRACTION
) -> list[Message]:
    """An SCAE episode's judge request under `condition`."""
    return judge_messages(
        episode_trajectory(episode), condition, rubric=BLAME_RUBRIC, fraction=fraction
    )
