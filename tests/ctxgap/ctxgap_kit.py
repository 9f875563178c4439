"""Helpers of the CTXGAP tests: data directories written from Python lists."""

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
