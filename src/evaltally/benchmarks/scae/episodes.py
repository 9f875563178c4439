"""SCAE episodes: strict reading of the episode JSONL format (docs/scae.md, "Episodes").

One JSON object per line:

    {"id": "acme-101", "repository": "acme/ledgerkit", "task": "<issue text>",
     "gold": ["src/ledger/rounding.py"],
     "outcome": {"success": true, "recall": 1.0, "answer": ["src/ledger/rounding.py"]},
     "steps": [{"tool": "search", "target": "round_half", "output": "src/ledger/..."}, ...],
     "meta": {...}}

`meta` (any object) and, per step, `mentions` (the objects the output names, replacing the
text scan of `provenance.py`) and the outcome's `recall` and `answer` are optional; every other
key is required and unknown keys are refused. Every problem is a `DataError` naming the file,
the 1-based line, the episode id (when readable), the field and the reason, e.g.
`episodes.jsonl:4: episode acme-7: field steps[2].tool: must be a non-empty string`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from evaltally.errors import DataError
from evaltally.jsonl import Where, read_records

EPISODE_KEYS = ("id", "repository", "task", "gold", "outcome", "steps", "meta")
STEP_KEYS = ("tool", "target", "output", "mentions")
OUTCOME_KEYS = ("success", "recall", "answer")
#: Recall given beside an answer must equal |gold ∩ answer| / |gold| up to this.
RECALL_TOLERANCE = 1e-9


def normalize_object(name: str) -> str:
    """Object names compare after dropping leading `./` (`./src/a.py` is `src/a.py`)."""
    while name.startswith("./"):
        name = name[2:]
    return name


@dataclass(frozen=True)
class Step:
    tool: str
    target: str | None
    """The object the step operates on (a path, a query); None for tools that take none."""
    output: str
    mentions: tuple[str, ...] | None = None
    """Objects the output names, when the episode states them; None: scan the output text."""


@dataclass(frozen=True)
class Outcome:
    success: bool
    recall: float | None = None
    answer: tuple[str, ...] | None = None
    """The agent's final answer (the predicted object set), when recorded."""


@dataclass(frozen=True)
class Episode:
    id: str
    repository: str
    task: str
    gold: tuple[str, ...]
    outcome: Outcome
    steps: tuple[Step, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""
    line: int = 0

    @property
    def total_steps(self) -> int:
        return len(self.steps)


def _keys(rec: Mapping[str, Any], allowed: tuple[str, ...], prefix: str, w: Where) -> None:
    unknown = sorted(set(rec) - set(allowed))
    if unknown:
        raise w.error(
            f"{prefix}{unknown[0]}", f"unknown key; valid keys here: {', '.join(allowed)}"
        )


def _text(rec: Mapping[str, Any], key: str, fld: str, w: Where, *, empty: bool = False) -> str:
    if key not in rec:
        raise w.error(fld, "missing")
    value = rec[key]
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise w.error(fld, "must be a string" if empty else "must be a non-empty string")
    return value


def _names(value: Any, fld: str, w: Where, *, allow_empty: bool) -> tuple[str, ...]:
    if not isinstance(value, list) or (not value and not allow_empty):
        kind = "a list" if allow_empty else "a non-empty list"
        raise w.error(fld, f"must be {kind} of object names")
    out: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not normalize_object(item).strip():
            raise w.error(f"{fld}[{i}]", "must be a non-empty string")
        name = normalize_object(item)
        if name in out:
            raise w.error(f"{fld}[{i}]", f"{name!r} is listed twice")
        out.append(name)
    return tuple(out)


def _step(value: Any, i: int, w: Where) -> Step:
    fld = f"steps[{i}]"
    if not isinstance(value, dict):
        raise w.error(fld, f"must be an object, got {type(value).__name__}")
    _keys(value, STEP_KEYS, f"{fld}.", w)
    tool = _text(value, "tool", f"{fld}.tool", w)
    if "target" not in value:
        raise w.error(f"{fld}.target", "missing (use null for a tool that takes no object)")
    target = value["target"]
    if target is not None and (not isinstance(target, str) or not target.strip()):
        raise w.error(f"{fld}.target", "must be a non-empty string or null")
    output = _text(value, "output", f"{fld}.output", w, empty=True)
    mentions = None
    if "mentions" in value:
        mentions = _names(value["mentions"], f"{fld}.mentions", w, allow_empty=True)
    return Step(
        tool=tool,
        target=normalize_object(target) if target is not None else None,
        output=output,
        mentions=mentions,
    )


def _outcome(value: Any, gold: tuple[str, ...], w: Where) -> Outcome:
    if not isinstance(value, dict):
        raise w.error("outcome", "must be an object with at least `success`")
    _keys(value, OUTCOME_KEYS, "outcome.", w)
    if not isinstance(value.get("success"), bool):
        raise w.error("outcome.success", "must be true or false")
    success: bool = value["success"]
    recall = value.get("recall")
    if recall is not None:
        if isinstance(recall, bool) or not isinstance(recall, int | float):
            raise w.error("outcome.recall", "must be a number in [0, 1]")
        recall = float(recall)
        if not 0.0 <= recall <= 1.0:
            raise w.error("outcome.recall", f"must be in [0, 1], got {recall}")
        if success != (recall == 1.0):
            raise w.error("outcome.recall", f"{recall} contradicts success = {success}")
    answer = None
    if "answer" in value:
        answer = _names(value["answer"], "outcome.answer", w, allow_empty=True)
        found = len(set(gold) & set(answer))
        if success != (found == len(gold)):
            raise w.error(
                "outcome.success",
                f"{success} contradicts the answer ({found} of {len(gold)} gold objects named)",
            )
        if recall is not None and abs(recall - found / len(gold)) > RECALL_TOLERANCE:
            raise w.error(
                "outcome.recall", f"{recall} != {found}/{len(gold)} gold objects in the answer"
            )
    return Outcome(success=success, recall=recall, answer=answer)


def parse_episode(rec: Any, path: Path, line: int) -> Episode:
    """Validate one decoded line (rules in the module docstring and docs/scae.md)."""
    if not isinstance(rec, dict):
        raise DataError(f"{path}:{line}: an episode must be a JSON object")
    raw_id = rec.get("id")
    w = Where(
        path, line, raw_id if isinstance(raw_id, str) and raw_id.strip() else None, noun="episode"
    )
    _keys(rec, EPISODE_KEYS, "", w)
    episode_id = _text(rec, "id", "id", w)
    repository = _text(rec, "repository", "repository", w)
    task = _text(rec, "task", "task", w)
    if "gold" not in rec:
        raise w.error("gold", "missing")
    gold = _names(rec["gold"], "gold", w, allow_empty=False)
    if "steps" not in rec:
        raise w.error("steps", "missing")
    raw_steps = rec["steps"]
    if not isinstance(raw_steps, list) or not raw_steps:
        raise w.error("steps", "must be a non-empty list of step objects")
    steps = tuple(_step(s, i, w) for i, s in enumerate(raw_steps))
    if "outcome" not in rec:
        raise w.error("outcome", "missing")
    outcome = _outcome(rec["outcome"], gold, w)
    meta = rec.get("meta", {})
    if not isinstance(meta, dict):
        raise w.error("meta", "must be an object")
    return Episode(
        id=episode_id,
        repository=repository,
        task=task,
        gold=gold,
        outcome=outcome,
        steps=steps,
        meta=meta,
        source=str(path),
        line=line,
    )


def load_episodes(path: str | Path) -> list[Episode]:
    """Every episode of a `.jsonl` (or `.jsonl.gz`) file, validated; ids must be unique."""
    return read_records(
        Path(path), parse_episode, lambda e: e.id, what="episode file", noun="episode",
        id_field="id",
    )  # fmt: skip


def example_path() -> Path:
    """The small made-up example set shipped with the package (docs/scae.md, "Example set")."""
    return Path(str(resources.files("evaltally") / "data" / "scae_example" / "episodes.jsonl"))
