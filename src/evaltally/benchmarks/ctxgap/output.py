"""Output files that are never overwritten: an earlier result or failure must stay readable.

A file is written under a temporary name and then hard-linked to its final name, which fails
if that name exists, so two commands racing for one name cannot both win and a crash never
leaves a partial file under the final name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from evaltally.errors import EvaltallyError


def _exists(path: Path) -> EvaltallyError:
    return EvaltallyError(
        f"{path}: already exists; outputs are never overwritten "
        "(choose another name or move the old file away)"
    )


def refuse_existing(*paths: Path) -> None:
    """Check every output name before any work is done."""
    for path in paths:
        if path.exists() or path.is_symlink():
            raise _exists(path)


def write_new(path: Path, data: bytes) -> Path:
    refuse_existing(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        try:
            os.link(tmp, path)
        finally:
            tmp.unlink()
    except FileExistsError:
        raise _exists(path) from None
    except OSError as exc:
        raise EvaltallyError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path


def write_new_jsonl(path: Path, rows: Iterable[Any]) -> int:
    """Write rows as JSON Lines; returns the number of rows."""
    lines = [orjson.dumps(row) + b"\n" for row in rows]
    write_new(path, b"".join(lines))
    return len(lines)
