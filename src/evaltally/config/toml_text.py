"""Writing the small TOML configs that commands compose for a derived run (`tally fork`, `tally
scae cte-judge`): a `[run]` table, `[[models]]` entries taken as read from another config, and
one `[[benchmarks]]` entry. Python's tomllib only reads; these values are few and plain, so a
short writer is enough (tables nested inside an entry are written inline).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_string(text: str) -> str:
    """A TOML basic string. JSON's escapes are TOML's, except that TOML also refuses a raw
    DEL character."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else toml_string(key)


def toml_value(value: Any) -> str:
    """A value as tomllib reads it back (tables inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write a {type(value).__name__} as TOML")


def table(header: str, values: Mapping[str, Any]) -> str:
    """`[header]` (or `[[header]]` when given with its brackets) and its key = value lines."""
    head = header if header.startswith("[[") else f"[{header}]"
    lines = [head, *(f"{toml_key(k)} = {toml_value(v)}" for k, v in values.items())]
    return "\n".join(lines) + "\n"


def derived_config(
    comment: str,
    run: Mapping[str, Any],
    models: Sequence[Mapping[str, Any]],
    benchmark: Mapping[str, Any],
) -> str:
    """A whole sweep config: `comment` (one line per entry) first, then the tables."""
    parts = ["\n".join(f"# {line}" for line in comment.splitlines()) + "\n", table("run", run)]
    parts += [table("[[models]]", m) for m in models]
    parts.append(table("[[benchmarks]]", benchmark))
    return "\n".join(parts)
