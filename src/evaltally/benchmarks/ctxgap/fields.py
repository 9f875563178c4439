"""Strict field checks for one JSON line: every error is `FILE:LINE: FIELD: reason`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaltally.errors import DataError

#: Longest id or name accepted (ids end up in call ids, reports and file names of users).
MAX_NAME = 200


@dataclass(frozen=True, slots=True)
class Line:
    """One decoded line of an input file, with what an error message needs to point at it."""

    path: Path
    lineno: int
    obj: Mapping[str, Any]

    def error(self, field: str, reason: str) -> DataError:
        return DataError(f"{self.path}:{self.lineno}: {field}: {reason}")

    def only(self, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
        """Refuse unknown keys (a typo must not be read as an absent optional field)."""
        for key in self.obj:
            if key not in required and key not in optional:
                allowed = ", ".join((*required, *optional))
                raise self.error(str(key), f"unknown field (allowed: {allowed})")
        for key in required:
            if key not in self.obj:
                raise self.error(key, "missing")

    def name(self, field: str, *, forbid: str = "") -> str:
        """An id or name: a non-empty single-line string without surrounding spaces."""
        value = self.obj[field]
        if not isinstance(value, str) or not value:
            raise self.error(field, "must be a non-empty string")
        if value != value.strip() or any(ord(c) < 32 for c in value):
            raise self.error(field, "must not contain line breaks, tabs or surrounding spaces")
        if len(value) > MAX_NAME:
            raise self.error(field, f"longer than {MAX_NAME} characters")
        for ch in forbid:
            if ch in value:
                raise self.error(field, f"must not contain {ch!r}")
        return value

    def text(self, field: str, *, empty: bool = False) -> str:
        value = self.obj[field]
        if not isinstance(value, str):
            raise self.error(field, "must be a string")
        if not empty and not value.strip():
            raise self.error(field, "must not be empty")
        return value

    def integer(self, field: str, low: int, high: int) -> int:
        value = self.obj[field]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.error(field, f"must be an integer from {low} to {high}, got {value!r}")
        return value

    def reason(self, field: str) -> str | None:
        """An optional invalidity reason: absent or null means valid."""
        value = self.obj.get(field)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.error(field, "must be a non-empty reason (a string) or null")
        return value
