"""Builders of judge rows and episode files for the SCAE tests."""

from __future__ import annotations

import json
from pathlib import Path

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


def episode_line(eid: str, total: int, gold_steps: tuple[int, ...] = (2,)) -> dict[str, object]:
    """A made-up localization episode of `total` steps; the steps in `gold_steps` (1-based) read
    the gold file, the others read a file of their own."""
    gold = "src/pkg/gold.py"
    steps = [
        {
            "tool": "read",
            "target": gold if s in gold_steps else f"src/pkg/other_{s}.py",
            "output": f"episode {eid} step {s}",
        }
        for s in range(1, total + 1)
    ]
    return {
        "id": eid,
        "repository": "acme/pkg",
        "task": f"Issue of episode {eid}.",
        "gold": [gold],
        "outcome": {"success": True, "answer": [gold]},
        "steps": steps,
    }


def write_episodes(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
