"""Reading a downloaded batch result document, which is provider data and untrusted: it is read
from a file in bounded pieces, never whole (JSONL line by line; Gemini's one JSON document by
scanning for its answers' byte spans, then reading one answer at a time), every credential is
redacted before anything is parsed, and a line that cannot be read is reported (`Unreadable`)
instead of raising, so one bad line never stops a run or every resume after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeVar

from evaltally.adapters.base import HttpResponse
from evaltally.adapters.http_errors import bad_body, decode_json
from evaltally.records import AttemptError
from evaltally.redact import redact_bytes

MAX_LINE_BYTES = 64 << 20
"""One result line holds one answer: far above any completion, far below the machine's memory."""
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


def guarded(
    build: Callable[[T], HttpResponse | AttemptError], data: T, raw: bytes
) -> HttpResponse | AttemptError:
    """`build(data)`, or a bad-body failure of this line when its fields are of no usable
    shape (a status code that is a string, a number out of range)."""
    try:
        return build(data)
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        return bad_body(raw, f"unreadable batch result line ({type(exc).__name__}: {exc})")


_STRUCTURE = re.compile(rb'[\[\]{}",:]')
_IN_STRING = re.compile(rb'["\\]')


@dataclass
class _Container:
    array: bool
    key: bytes | None = None
    expecting_key: bool = False


class _ArrayScanner:
    """The byte spans of the object elements of the first JSON array found under the keys
    `path` (e.g. `inlinedResponses.inlinedResponses`), found in one pass over a stream with a
    bounded buffer: only a key being read is ever held, never the document."""

    def __init__(self, path: tuple[bytes, ...]) -> None:
        self.path = path
        self.stack: list[_Container] = []
        self.target: int | None = None
        self.start: int | None = None
        self.in_string = self.escaped = False
        self.key: bytearray | None = None
        self.spans: list[tuple[int, int]] = []
        self.done = False

    def feed(self, chunk: bytes, offset: int) -> None:
        i = 0
        while i < len(chunk) and not self.done:
            if self.escaped:
                self._key_bytes(chunk[i : i + 1])
                self.escaped, i = False, i + 1
            elif self.in_string:
                i = self._string(chunk, i)
            else:
                match = _STRUCTURE.search(chunk, i)
                if match is None:
                    return
                self._structure(match.group(), offset + match.start())
                i = match.end()

    def _string(self, chunk: bytes, i: int) -> int:
        match = _IN_STRING.search(chunk, i)
        if match is None:
            self._key_bytes(chunk[i:])
            return len(chunk)
        self._key_bytes(chunk[i : match.end()])
        if match.group() == b"\\":
            self.escaped = True
        else:
            self.in_string = False
            if self.key is not None:
                self.stack[-1].key = bytes(self.key[:-1])
                self.key = None
        return match.end()

    def _key_bytes(self, data: bytes) -> None:
        if self.key is not None and len(self.key) < 256:
            self.key += data

    def _structure(self, char: bytes, at: int) -> None:
        top = self.stack[-1] if self.stack else None
        if char == b'"':
            self.in_string = True
            if top is not None and not top.array and top.expecting_key:
                self.key = bytearray()
        elif char == b":" and top is not None:
            top.expecting_key = False
        elif char == b"," and top is not None and not top.array:
            top.expecting_key, top.key = True, None
        elif char in b"{[":
            if self.target is not None and len(self.stack) == self.target and char == b"{":
                self.start = at
            if char == b"[" and self.target is None and self._at_path():
                self.target = len(self.stack) + 1
            self.stack.append(_Container(char == b"[", expecting_key=char == b"{"))
        elif char in b"}]" and self.stack:
            self.stack.pop()
            if self.target is not None and len(self.stack) < self.target:
                self.done = True
            elif self.start is not None and len(self.stack) == self.target:
                self.spans.append((self.start, at + 1))
                self.start = None

    def _at_path(self) -> bool:
        keys = [c.key for c in self.stack[-len(self.path) :]]
        return len(self.stack) >= len(self.path) and keys == list(self.path)


def array_spans(
    source: BinaryIO, path: tuple[bytes, ...], chunk_bytes: int = _SKIP_CHUNK
) -> list[tuple[int, int]]:
    """(start, end) byte offsets of every object in the first array at `path` (e.g.
    `inlinedResponses.inlinedResponses`), found reading `source` in bounded pieces."""
    scanner = _ArrayScanner(path)
    offset = 0
    source.seek(0)
    while not scanner.done and (chunk := source.read(chunk_bytes)):
        scanner.feed(chunk, offset)
        offset += len(chunk)
    return scanner.spans


def read_span(
    source: BinaryIO, number: int, span: tuple[int, int]
) -> tuple[bytes, dict[str, Any]] | Unreadable:
    """(redacted raw element, its JSON object), or why element `number` is unusable."""
    start, end = span
    if end - start > MAX_LINE_BYTES:
        return Unreadable(f"result {number} is longer than {MAX_LINE_BYTES:,} bytes")
    source.seek(start)
    raw = redact_bytes(source.read(end - start))
    element = decode_json(raw)
    if isinstance(element, dict):
        return raw, element
    return Unreadable(f"result {number} is not a JSON object")
