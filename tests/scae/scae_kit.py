"""Builders of judge rows for the SCAE statistics tests."""

from __future__ import annotations

from evaltally.benchmarks.scae.conditions import FULL, PREFIX, prefix_length
from evaltally.benchmarks.scae.provenance import StepProvenance
from evaltally.benchmarks.scae.rows import JudgeRow


def prov(code: str) -> tuple[StepProvenance, ...]:
    """`"-0O0-1-0"`: per step `O` (operates on a gold object) or `-`, then the number revealed."""
    return tuple(StepProvenance(code[i] == "O", int(code[i + 1])) for i in range(0, len(code), 2))


def pair_rows(
    episode: str,
    judge: str,
    total: int,
    full: int | None,
    prefix: int | None,
    provenance: tuple[StepProvenance, ...] = (),
    *,
    full_status: str = "ok",
    prefix_status: str = "ok",
) -> list[JudgeRow]:
    """The two rows of one episode; a status other than ok drops the step."""
    k = prefix_length(total)
    return [
        JudgeRow(episode, judge, FULL, full_status, full if full_status == "ok" else None,
                 total, total, provenance),
        JudgeRow(episode, judge, PREFIX, prefix_status,
                 prefix if prefix_status == "ok" else None, total, k, provenance),
    ]  # fmt: skip
