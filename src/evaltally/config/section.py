"""Typed reading of one TOML table of a config, every error naming the file, the dotted key and
the reason. Unknown keys are errors (`Section.only`), so a typo never silently falls back to a
default.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from evaltally.errors import ConfigError

NUMBER = (int, float)


class Section:
    """Typed access to one TOML table that remembers which keys were read."""

    def __init__(self, path: Path, where: str, data: object) -> None:
        if not isinstance(data, dict):
            raise ConfigError(path, where, f"must be a table, got {type(data).__name__}")
        self.path, self.where, self.data = path, where, data

    def key(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def get(self, name: str, types: type | tuple[type, ...], default: Any = None) -> Any:
        if name not in self.data:
            return default
        value = self.data[name]
        # bool is an int in Python; a config that says `concurrency = true` is a mistake.
        bad_bool = isinstance(value, bool) and bool not in _as_tuple(types)
        if bad_bool or not isinstance(value, types):
            want = " or ".join(t.__name__ for t in _as_tuple(types))
            raise ConfigError(
                self.path, self.key(name), f"must be {want}, got {type(value).__name__}"
            )
        return value

    def require(self, name: str, types: type | tuple[type, ...]) -> Any:
        if name not in self.data:
            raise ConfigError(self.path, self.key(name), "is required")
        return self.get(name, types)

    def number(self, name: str, types: type | tuple[type, ...], default: Any) -> Any:
        """A number that is finite: TOML's inf and nan are never a sensible setting."""
        value = self.get(name, types, default)
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(self.path, self.key(name), f"must be a finite number, got {value}")
        return value

    def positive(self, name: str, types: type | tuple[type, ...], default: Any) -> Any:
        value = self.number(name, types, default)
        if value is not None and value <= 0:
            raise ConfigError(self.path, self.key(name), f"must be > 0, got {value}")
        return value

    def only(self, allowed: set[str]) -> None:
        unknown = sorted(set(self.data) - allowed)
        if unknown:
            raise ConfigError(
                self.path,
                self.key(unknown[0]),
                f"unknown key; valid keys here: {', '.join(sorted(allowed))}",
            )


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def printable(sec: Section, name: str, value: str) -> str:
    if not value.isprintable():
        raise ConfigError(
            sec.path, sec.key(name), "holds control characters (NUL, tab, newline, ...)"
        )
    return value


def nonempty(sec: Section, name: str) -> str | None:
    value: str | None = sec.get(name, str)
    if value is not None and not value.strip():
        raise ConfigError(sec.path, sec.key(name), "must not be empty")
    return value
