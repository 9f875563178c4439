"""Helpers of the CTXGAP tests: data directories written from Python lists, and the
hand-computed fixture of test_ctxgap_stats.py as unit rows or as export rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

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


ANALYSIS = {"views": ["U", "T", "P"], "gap": ["U", "T"], "variants": None}
INVALID = [{"probe_id": "x9", "view": None, "reason": "contested reference"}]


def export_rows(
    observer: str = "obs", judge: str = "judge", benchmark: str = "ctxgap"
) -> list[dict[str, Any]]:
    """The fixture as a run's export would hold it: per unit, the observer's row (step 0) and
    the judge's (step 1) with the oracle fields of docs/ctxgap.md."""
    out = []
    for index, (pid, task, cp, cat, imp, atom, scores) in enumerate(PROBES):
        for view, score in scores.items():
            statuses = STATUSES.get(str(score), ("ok", "ok"))
            oracle = {
                "probe_id": pid,
                "task_id": task,
                "checkpoint": cp,
                "category": cat,
                "view": view,
                "importance": imp,
                "atom_id": atom,
                "probe_index": index,
                "analysis": ANALYSIS,
            }
            chain = f"{benchmark}-{observer}-{judge}-{pid}-{view}"
            first = index == 0 and view == "U"
            answered = (statuses[0] == "ok", statuses == ("ok", "ok"))
            for step, (role, model) in enumerate((("observer", observer), ("judge", judge))):
                out.append(
                    {
                        "benchmark_kind": "ctxgap",
                        "benchmark": benchmark,
                        "chain_id": chain,
                        "step": step,
                        "role": role,
                        "model": model,
                        "status": statuses[step],
                        "parsed": (score if step else "an answer") if answered[step] else None,
                        "usage": None,
                        **oracle,
                        "invalid_probes": INVALID if first and step == 0 else None,
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
    blocks = models or "".join(baseline(k) for k in (*observers, *judges))
    roles = f"observer = {list(observers)!r}\njudge = {list(judges)!r}\n".replace("'", '"')
    text = (
        f'[run]\nname = "{name}"\nruns_dir = "runs"\n\n{blocks}\n'
        f'[[benchmarks]]\nkind = "ctxgap"\n{options}\n[benchmarks.roles]\n{roles}'
    )
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path
