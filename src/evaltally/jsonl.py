"""Reading JSON Lines input (items, scenarios, exports, scripted answers) with errors that name
the file and the line. Gzip-compressed files (`.gz`) are read transparently."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

import orjson

from evaltally.errors import DataError


def _open(path: Path) -> IO[bytes]:
    if path.name.endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return path.open("rb")


def read_jsonl(path: Path, what: str = "file") -> Iterator[tuple[int, Any]]:
    """(line number, decoded value) for every non-blank line; `what` names the file's role in
    error messages ("items file", "export", ...). Lines starting with `#` are comments."""
    try:
        fh = _open(path)
    except OSError as exc:
        raise DataError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from exc
    try:
        with fh:
            for lineno, line in enumerate(fh, 1):
                stripped = line.strip()
                if not stripped or stripped.startswith(b"#"):
                    continue
                try:
                    yield lineno, orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise DataError(f"{path}:{lineno}: not valid JSON ({exc})") from None
    except (OSError, EOFError) as exc:
        raise DataError(f"{path}: cannot read the {what}: {exc}") from exc


def read_objects(path: Path, what: str = "file") -> Iterator[tuple[int, dict[str, Any]]]:
    """Like `read_jsonl`, but every line must be a JSON object."""
    for lineno, value in read_jsonl(path, what):
        if not isinstance(value, dict):
            raise DataError(f"{path}:{lineno}: each line of the {what} must be a JSON object")
        yield lineno, value
