"""Provider and model text on a terminal: every control character is shown, never obeyed.

A provider's error message, a model's answer or a data file's id can carry escape sequences that
clear the screen, move the cursor to forge a summary line, open an OSC 8 link or write the
clipboard (OSC 52). `visible()` is the one rule: C0 and C1 control characters, DEL and the
Unicode bidirectional overrides become `\\x1b`-style escapes. Line breaks are kept only where a
caller's own text spans lines. `VisibleConsole` applies it to every text segment a rich Console
writes, so tables and labels stay styled while nothing printed can steer the terminal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_ANY = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}]")
_NOT_NEWLINE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, newlines: bool = False) -> str:
    """`text` with its control characters written out (`\\x1b`, `\\x9b`, `\\u202e`); tabs are
    kept, and line breaks too when `newlines`."""
    pattern = _NOT_NEWLINE if newlines else _ANY
    return pattern.sub(_escape, text)


class VisibleConsole(Console):
    """A rich Console whose printed text passes through `visible()` (its own styling and the
    cursor control of a live display are not text, and still work)."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment
            if segment.control
            else Segment(visible(segment.text, newlines=True), *segment[1:])
            for segment in buffer
        )
