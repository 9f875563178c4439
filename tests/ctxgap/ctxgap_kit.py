"""Helpers of the CTXGAP tests: data directories written from Python lists, the hand-computed
fixture of test_ctxgap_stats.py as unit rows or as export rows, sweep configs, the leak checker
of observer inputs, and an independent reading of the accuracy formula."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import orjson

from evaltally.benchmarks.ctxgap.chain import OBSERVER_ROW_FIELDS
from evaltally.benchmarks.ctxgap.data import Dataset, Probe, View, example_dir
from evaltally.prompts.ctxgap import (
    ACTOR_PROMPT_VERSION,
    OBSERVER_PROMPT_VERSION,
    render_actor,
    render_observer,
)

Rows = list[dict[str, Any]]


def view(task: str, checkpoint: str, name: str, text: str = "some text") -> dict[str, Any]:
    return {"task_id": task, "checkpoint": checkpoint, "view": name, "text": text}


def probe(probe_id: str, task: str = "t1", checkpoint: str = "c1", **extra: Any) -> dict[str, Any]:
    base = {
        "probe_id": probe_id,
        "task_id": task,
        "checkpoint": checkpoint,
        "category": "decision",
        "question": f"question {probe_id}?",
        "reference": f"reference {probe_id}",
        "importance": 2,
    }
    return {**base, **extra}


def write_rows(path: Path, rows: Rows) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


# probe, task, checkpoint, category, importance, atom, {view: verdict | outcome}
PROBES: list[tuple[str, str, str, str, int, str, dict[str, Any]]] = [
    ("a1", "A", "c1", "X", 3, "a1", {"U": 1, "T": 1, "P": 0}),
    ("a2", "A", "c1", "X", 1, "a2", {"U": 0, "T": 1, "P": 1}),
    ("a3", "A", "c2", "Y", 2, "a3", {"U": 0.5, "T": 1}),
    ("b1", "B", "c1", "X", 2, "b1", {"U": 0, "T": 1, "P": 1}),
    ("b2", "B", "c1", "Y", 0, "b2", {"U": 1, "T": 0.5, "P": 0}),
    ("b3", "B", "c1", "Y", 2, "f", {"U": "missing", "T": 1, "P": 1}),
    ("b4", "B", "c1", "Y", 2, "f", {"U": 0.5, "T": "invalid_verdict", "P": 1}),
    ("z1", "C", "c1", "Z", 0, "z1", {"U": 1, "T": 1, "P": 0}),
]
STATUSES = {
    "missing": ("ok", "unfinished"),
    "invalid_verdict": ("ok", "parse_error"),
    "failed": ("failed", "blocked"),
    "empty_answer": ("parse_error", "blocked"),
}


def rows(observer: str = "obs", outcome: str | None = None) -> list[dict[str, Any]]:
    out = []
    for pid, task, cp, cat, imp, atom, scores in PROBES:
        for view, score in scores.items():
            kind = outcome or score
            obs, judge = STATUSES.get(kind, ("ok", "ok"))
            out.append(
                {
                    "observer_model": observer,
                    "judge_model": "judge",
                    "probe_id": pid,
                    "task_id": task,
                    "checkpoint": cp,
                    "category": cat,
                    "view": view,
                    "importance": imp,
                    "atom_id": atom,
                    "observer_status": obs,
                    "judge_status": judge,
                    "verdict": score if kind not in STATUSES else None,
                }
            )
    return out


ORACLE = ("probe_id", "task_id", "checkpoint", "category", "view", "importance", "atom_id")
ANALYSIS = {"views": ["U", "T", "P"], "gap": ["U", "T"], "variants": None}
INVALID = [{"probe_id": "x9", "view": None, "reason": "contested reference"}]


def export_rows(
    observer: str = "obs", judge: str = "judge", benchmark: str = "ctxgap"
) -> list[dict[str, Any]]:
    """The fixture as a run's export would hold it: per unit, the observer's row (step 0) and
    the judge's (step 1) with the oracle fields of docs/ctxgap.md."""
    index = {p[0]: i for i, p in enumerate(PROBES)}
    out = []
    for unit in rows(observer):
        oracle = {k: unit[k] for k in ORACLE}
        pid, view = unit["probe_id"], unit["view"]
        models = (observer, judge)
        parsed = ("an answer" if unit["observer_status"] == "ok" else None, unit["verdict"])
        for step, role in enumerate(("observer", "judge")):
            out.append(
                {
                    "benchmark_kind": "ctxgap",
                    "benchmark": benchmark,
                    "chain_id": f"{benchmark}-{observer}-{judge}-{pid}-{view}",
                    "step": step,
                    "role": role,
                    "model": models[step],
                    "status": unit[f"{role}_status"],
                    "parsed": parsed[step],
                    "usage": None,
                    **oracle,
                    "probe_index": index[pid],
                    "analysis": ANALYSIS,
                    "invalid_probes": INVALID if (pid, view, step) == ("a1", "U", 0) else None,
                }
            )
    return out


def baseline(key: str) -> str:
    return f'[[models]]\nkey = "{key}"\nprovider = "baseline"\nmodel = "{key}"\n'


def write_sweep(
    tmp_path: Path,
    options: str = 'data = "example"',
    *,
    observers: tuple[str, ...] = ("reference",),
    judges: tuple[str, ...] = ("exact_match",),
    models: str = "",
    name: str = "cg",
) -> Path:
    """A sweep config with one ctxgap benchmark; models default to offline stand-ins."""
    blocks = models or "".join(baseline(k) for k in dict.fromkeys((*observers, *judges)))
    roles = f"observer = {list(observers)!r}\njudge = {list(judges)!r}\n".replace("'", '"')
    text = (
        f'[run]\nname = "{name}"\nruns_dir = "runs"\n\n{blocks}\n'
        f'[[benchmarks]]\nkind = "ctxgap"\n{options}\n[benchmarks.roles]\n{roles}'
    )
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


SECRET_KEYS = {"reference", "importance", "category", "atom_id", "verdict", "note", "invalid"}


def keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys(v)}
    return set()


def _secrets(ds: Dataset) -> list[str]:
    """Every text an observer must not see: references and the labelers' notes."""
    notes = []
    for line in (example_dir() / "labels.jsonl").read_text().splitlines():
        if line and not line.startswith("#"):
            notes.append(orjson.loads(line).get("note"))
    return [p.reference for p in ds.probes] + [n for n in notes if n]


def leaks(row: dict[str, Any], ds: Dataset) -> list[str]:
    """Problems of one exported row, checked field by field."""
    probes = {p.probe_id: p for p in ds.probes}
    problems = []
    if tuple(row) != OBSERVER_ROW_FIELDS:
        problems.append(f"fields {tuple(row)}")
    probe = probes.get(row.get("probe_id", ""))
    if probe is None:
        return [*problems, "unknown probe"]
    view = ds.views[(probe.task_id, probe.checkpoint)].get(row.get("view", ""))
    if view is None or probe.invalid_reason(view.name) is not None:
        return [*problems, "not a planned (probe, view)"]
    expected = {
        "probe_id": probe.probe_id,
        "task_id": probe.task_id,
        "checkpoint": probe.checkpoint,
        "view": view.name,
        "prompt_version": OBSERVER_PROMPT_VERSION,
        "question": probe.question,
        "view_text": view.text,
        "messages": render_observer(question=probe.question, view_text=view.text),
    }
    public = [view.text]
    if view.messages is not None:  # an actor view: the actor's own transcript, then the probe
        expected["prompt_version"] = ACTOR_PROMPT_VERSION
        expected["messages"] = render_actor(question=probe.question, transcript=view.messages)
        public = [m["content"] for m in view.messages]
    problems += [f"field {k}" for k in row if row[k] != expected.get(k)]
    problems += [f"secret key {k}" for k in keys(row) & SECRET_KEYS]
    # The other fields were compared with their public values above; in the messages, what is
    # left once the two public inputs are cut out is the prompt's own wording, where no
    # reference or note may be found.
    for message in row.get("messages", []):
        residue = str(message.get("content", "")).replace(probe.question, "")
        for part in public:
            residue = residue.replace(part, "")
        problems += [f"secret text {s!r}" for s in _secrets(ds) if s in residue]
    return problems


def accuracy(
    ds: Dataset, views: tuple[str, ...], scored: str, score: Callable[[Probe, View], Fraction]
) -> Fraction:
    """Equal-task, intention-to-evaluate accuracy of view `scored` over the probes planned in
    every one of `views`, with category weights counted over those probes; `score` gives each
    unit's score (0 for one that is not scored). Written from docs/ctxgap.md, independently of
    benchmarks/ctxgap/stats.py."""
    planned: dict[str, set[str]] = {}
    for p, v in ds.planned():
        planned.setdefault(p.probe_id, set()).add(v.name)
    probes = [p for p in ds.probes if set(views) <= planned.get(p.probe_id, set())]
    weight = {}
    for c in {p.category for p in probes}:
        mine = [p for p in probes if p.category == c]
        atoms = {(p.task_id, p.atom_id) for p in mine if p.importance >= 2}
        weight[c] = Fraction(len(atoms), len(mine))
    per_task = []
    for task in sorted({p.task_id for p in probes}):
        num = den = Fraction(0)
        for p in (p for p in probes if p.task_id == task):
            num += weight[p.category] * score(p, ds.views[(p.task_id, p.checkpoint)][scored])
            den += weight[p.category]
        if den:
            per_task.append(num / den)
    return sum(per_task, Fraction(0)) / len(per_task)
