"""Report tables as plain data (header + rows of strings), rendered as markdown or rich.

Shared by every benchmark's report section. Rates are shown in percent with one decimal;
`± h` is the half-width of the 95% bootstrap interval. Undefined values (empty denominators)
show as "-". Cells are plain text: rich renders them without markup, since model keys and
benchmark labels come from users.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table as RichTable
from rich.text import Text


@dataclass(frozen=True)
class Table:
    title: str
    header: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]
    note: str = ""
    left: int = 3
    """How many leading columns are names (left-aligned); the rest are numbers."""


def pct(cell: Mapping[str, Any] | None, *, interval: bool = False) -> str:
    if not cell or cell.get("value") is None:
        return "-"
    text = f"{100 * cell['value']:.1f}"
    lo, hi = cell.get("ci_low"), cell.get("ci_high")
    if interval and lo is not None and hi is not None:
        text += f" ± {100 * (hi - lo) / 2:.1f}"
    return text


def num(cell: Mapping[str, Any] | None) -> str:
    if not cell or cell.get("value") is None:
        return "-"
    return f"{cell['value']:.1f}"


def number(x: float | None, fmt: str = ".3f") -> str:
    """A bare number as a table cell: `fmt`, or "-" when there is none."""
    return "-" if x is None else format(x, fmt)


def to_markdown(table: Table) -> str:
    lines = [f"### {table.title}", "", "| " + " | ".join(table.header) + " |"]
    lines.append("|" + "|".join(" --- " for _ in table.header) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in table.rows]
    if table.note:
        lines += ["", table.note]
    return "\n".join(lines) + "\n"


def to_rich(table: Table) -> RichTable:
    # Cells carry model keys, item ids and model output: Text, so brackets are never markup.
    out = RichTable(title=Text(table.title), caption=Text(table.note) if table.note else None)
    for i, col in enumerate(table.header):
        out.add_column(Text(col), justify="left" if i < table.left else "right")
    for row in table.rows:
        out.add_row(*(Text(cell) for cell in row))
    return out
