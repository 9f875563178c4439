"""Reading JSON Lines input (items, scenarios, exports, scripted answers) with errors that name
the file and the line. Gzip-compressed files (`.gz`) are read transparently.

A line is read only up to `max_line_bytes`: a file without line breaks (a pretty-printed JSON
array, a binary file, a gzip bomb) fails at its first line instead of being read until the
machine runs out of memory."""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar, cast

import orjson

from evaltally.errors import DataError

T = TypeVar("T")

MAX_LINE_BYTES = 32 * 1024 * 1024
"""Far above any item (a CTE scenario with its whole service source is about 20 KB)."""
MAX_BLANK_LINES = 1_000_000
"""Blank and comment lines allowed in one file: a gzip of nothing but line breaks (a few MB on
disk, billions of lines) would otherwise keep a command busy for minutes."""
MAX_READ_BYTES = 16 * 1024**3
"""Bytes read from one input (decompressed, for `.gz`), far above any benchmark's data."""


def _open(path: Path) -> IO[bytes]:
    if path.exists() and not path.is_file():
        # A FIFO or device would block or never end.
        raise OSError(f"{path} is not a regular file")
    if path.name.endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return path.open("rb")


def read_jsonl(
    path: Path, what: str = "file", *, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[tuple[int, Any]]:
    """(line number, decoded value) for every non-blank line; `what` names the file's role in
    error messages ("items file", "export", ...). Lines starting with `#` are comments."""
    try:
        fh = _open(path)
    except OSError as exc:
        raise DataError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from exc
    blank = read = 0
    try:
        with fh:
            for lineno, line in enumerate(_lines(fh, max_line_bytes), 1):
                if line is None:
                    raise DataError(
                        f"{path}:{lineno}: line longer than {max_line_bytes:,} bytes; each "
                        f"record of the {what} must be one line of JSON (a file without line "
                        "breaks?)"
                    )
                read += len(line)
                if read > MAX_READ_BYTES:
                    raise DataError(f"{path}: over {MAX_READ_BYTES:,} bytes decompressed")
                stripped = line.strip()
                if not stripped or stripped.startswith(b"#"):
                    blank += 1
                    if blank > MAX_BLANK_LINES:
                        raise DataError(
                            f"{path}:{lineno}: over {MAX_BLANK_LINES:,} blank or comment lines; "
                            f"not a {what} (padded or damaged?)"
                        )
                    continue
                try:
                    yield lineno, orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise DataError(f"{path}:{lineno}: not valid JSON ({exc})") from None
    except (OSError, EOFError) as exc:
        raise DataError(f"{path}: cannot read the {what}: {exc}") from exc


def _lines(fh: IO[bytes], limit: int) -> Iterator[bytes | None]:
    """The lines of `fh`, each read with a bounded buffer; None for a line over `limit`."""
    while line := fh.readline(limit + 1):
        yield None if len(line.rstrip(b"\n")) > limit else line


def read_objects(path: Path, what: str = "file") -> Iterator[tuple[int, dict[str, Any]]]:
    """Like `read_jsonl`, but every line must be a JSON object."""
    for lineno, value in read_jsonl(path, what):
        if not isinstance(value, dict):
            raise DataError(f"{path}:{lineno}: each line of the {what} must be a JSON object")
        yield lineno, value


class Where:
    """Error messages naming the file, the line, the record and the (nested) field:
    `file:12: item 3f..: field trace_original[4].args: expected dict`."""

    def __init__(
        self, path: Path, line: int, record_id: str | None, parent: str = "", *, noun: str = "item"
    ) -> None:
        self.path, self.line, self.record_id, self.parent, self.noun = (
            path, line, record_id, parent, noun,
        )  # fmt: skip

    def sub(self, name: str) -> Where:
        return Where(self.path, self.line, self.record_id, self._join(name), noun=self.noun)

    def _join(self, name: str) -> str:
        return (
            f"{self.parent}.{name}"
            if self.parent and not name.startswith("[")
            else (f"{self.parent}{name}" if self.parent else name)
        )

    def error(self, fld: str, reason: str) -> DataError:
        return DataError(
            f"{self.path}:{self.line}: {self.noun} {self.record_id or '?'}: field "
            f"{self._join(fld)}: {reason}"
        )


def read_records(
    path: Path,
    parse: Callable[[Any, Path, int], T],
    record_id: Callable[[T], str],
    *,
    what: str,
    noun: str,
    id_field: str,
) -> list[T]:
    """Every line of a data file validated by `parse(value, path, line)`, ids unique, at least
    one record. A repeated id is refused naming both lines:
    `file:7: {noun} x: field {id_field}: duplicate of line 2`."""
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    out: list[T] = []
    seen: dict[str, int] = {}
    for line, value in read_jsonl(path, what):
        record = parse(value, path, line)
        key = record_id(record)
        if key in seen:
            raise Where(path, line, key, noun=noun).error(
                id_field, f"duplicate of line {seen[key]}"
            )
        seen[key] = line
        out.append(record)
    if not out:
        raise DataError(f"{path}: holds no {noun} records")
    return out
