"""Token usage is provider input, and untrusted: bound it where it is recorded and summed.

A provider (or a proxy in front of it) can report any number: 2^63 - 1 made SQLite's integer
SUM() overflow, so `tally status` failed and every `tally resume` crashed before sending
anything. Each field is recorded within 0..MAX_TOKENS (the row says what was reported when a
value had to be bounded), and every aggregate bounds each value again and sums with total(),
which never overflows, so ledgers written before this rule stay readable.
"""

from __future__ import annotations

import math

from evaltally.records import Usage

MAX_TOKENS = 2**40
"""About 1.1e12 tokens: far above any real call, far below where a sum of a million rows
could lose precision or overflow."""

FIELDS = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens")
NO_USAGE: tuple[None, None, None, None] = (None, None, None, None)
_MAX_SHOWN = 40


def bound_usage(usage: Usage | None) -> tuple[tuple[int | None, ...], str | None]:
    """The four usage columns as recorded (empty where the provider sent no counts), and the
    note to record with them: the usage's own (an inferred reasoning count) and the fields that
    were bounded."""
    if usage is None:
        return NO_USAGE, None
    counts = (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens, usage.cached_tokens)
    # The usual case, checked at once (a bool's type is not int).
    plain = type(counts[0]) is type(counts[1]) is type(counts[2]) is type(counts[3]) is int
    if plain and min(counts) >= 0 and max(counts) <= MAX_TOKENS:
        return _unreported(usage, counts), usage.note
    recorded, note = _bounded_counts(usage)
    return _unreported(usage, recorded), with_note(usage.note, note)


def _unreported(usage: Usage, counts: tuple[int, ...]) -> tuple[int | None, ...]:
    """Counts the provider did not send are empty; a reasoning count inferred from visible
    thinking is kept, since it is the evidence the model reasoned."""
    if usage.reported:
        return counts
    return (None, None, counts[2] or None, None)


def _bounded_counts(usage: Usage) -> tuple[tuple[int, ...], str | None]:
    values: list[int] = []
    bounded: list[str] = []
    for name in FIELDS:
        reported = getattr(usage, name)
        value = _bounded(reported)
        if value != reported or isinstance(reported, bool):
            bounded.append(f"{name}={_show(reported)}")
        values.append(value)
    if not bounded:
        return tuple(values), None
    note = f"provider reported usage out of range 0..2^40, recorded bounded: {', '.join(bounded)}"
    return tuple(values), note


def _bounded(reported: object) -> int:
    if isinstance(reported, bool) or not isinstance(reported, int | float):
        return 0
    if isinstance(reported, float):
        if math.isnan(reported):
            return 0
        if math.isinf(reported):
            return MAX_TOKENS if reported > 0 else 0
    return min(max(int(reported), 0), MAX_TOKENS)


def _show(value: object) -> str:
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an integer of {value.bit_length()} bits"  # repr() refuses very long ints
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else f"{text[:_MAX_SHOWN]}… ({len(text)} chars)"


def with_note(text: str | None, note: str | None) -> str | None:
    """Append a bounding note to an existing detail/reason column value."""
    if note is None:
        return text
    return note if not text else f"{text}; {note}"


def sql_total(column: str) -> str:
    """SQL for the sum of a usage column: each value bounded, summed as a float (exact below
    2^53), NULLs ignored; int() the result."""
    return f"total(min(max({column}, 0), {MAX_TOKENS}))"
