"""Reading a downloaded batch result document, which is provider data and untrusted: it is read
from a file in bounded pieces (never whole, unless the API's shape is one JSON document, which is
then capped), every credential is redacted before anything is parsed, and a line that cannot be
read is reported (`Unreadable`) instead of raising, so one bad line never stops a run or every
resume after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeVar

from evaltally.adapters.base import HttpResponse
from evaltally.adapters.http_errors import bad_body, decode_json
from evaltally.errors import ProviderError
from evaltally.records import AttemptError
from evaltally.redact import redact_bytes

MAX_LINE_BYTES = 64 << 20
"""One result line holds one answer: far above any completion, far below the machine's memory."""
MAX_DOCUMENT_BYTES = 512 << 20
"""Gemini's inline results arrive as one JSON document (its requests are capped at 20 MB)."""
MAX_BLANK_LINES = 1_000_000
"""A document of empty lines is not a result file; reading it line by line would take minutes."""
_SKIP_CHUNK = 1 << 20

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A result line that names no call we can trust: why, for the attempts left without one."""

    reason: str


def jsonl_records(source: BinaryIO) -> Iterator[tuple[bytes, dict[str, Any]] | Unreadable]:
    """(redacted raw line, its JSON object) of every non-blank line, or why a line is unusable.
    At most MAX_LINE_BYTES of one line are ever held."""
    number = blank = 0
    while True:
        raw = source.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            _skip_line(source)
            yield Unreadable(f"result line {number} is longer than {MAX_LINE_BYTES:,} bytes")
            continue
        raw = raw.strip()
        if not raw:
            blank += 1
            if blank > MAX_BLANK_LINES:
                yield Unreadable(f"over {MAX_BLANK_LINES:,} blank lines; the rest is not read")
                return
            continue
        raw = redact_bytes(raw)
        line = decode_json(raw)
        if isinstance(line, dict):
            yield raw, line
        else:
            yield Unreadable(f"result line {number} is not a JSON object")


def _skip_line(source: BinaryIO) -> None:
    while (rest := source.readline(_SKIP_CHUNK)) and not rest.endswith(b"\n"):
        pass


def result_lines(
    source: BinaryIO, members: Sequence[str]
) -> Iterator[tuple[str, bytes, dict[str, Any]] | Unreadable]:
    """(custom_id, raw line, line) of every JSONL result line that names a member; lines whose
    `custom_id` is not a string are Unreadable, lines naming another call are skipped."""
    wanted = set(members)
    for record in jsonl_records(source):
        if isinstance(record, Unreadable):
            yield record
            continue
        raw, line = record
        custom_id = line.get("custom_id")
        if not isinstance(custom_id, str):
            kind = type(custom_id).__name__
            yield Unreadable(f"a result line's custom_id is a {kind}, not a call id")
        elif custom_id in wanted:
            yield custom_id, raw, line


def whole_document(source: BinaryIO, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """A result document that is one JSON value, redacted; refused above `limit` bytes."""
    body = source.read(limit + 1)
    if len(body) > limit:
        raise ProviderError(
            f"the batch result document is over {limit:,} bytes; it is not read "
            "(split the sweep into smaller batches with [models.batch] max_bytes)"
        )
    return redact_bytes(body)


def guarded(
    build: Callable[[T], HttpResponse | AttemptError], data: T, raw: bytes
) -> HttpResponse | AttemptError:
    """`build(data)`, or a bad-body failure of this line when its fields are of no usable
    shape (a status code that is a string, a number out of range)."""
    try:
        return build(data)
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        return bad_body(raw, f"unreadable batch result line ({type(exc).__name__}: {exc})")
