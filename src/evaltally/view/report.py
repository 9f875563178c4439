"""The report page: the run's report.md (written by `tally report`) as blocks the page renders
as text, and the PNG plots it names.

Only the markdown `tally report` writes is understood (headings, pipe tables, bullet lists,
paragraphs, images); anything else shows as a paragraph of plain text. Nothing is interpreted as
HTML. A plot is served only if it is a PNG directly inside the run directory.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from evaltally.view.runs import ViewRun

REPORT_FILE = "report.md"
_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)\s]+)\)$")
_PLOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.png$")

Block = dict[str, Any]


def report_blocks(run: ViewRun) -> dict[str, Any]:
    path = run.run_dir / REPORT_FILE
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return {"blocks": None, "hint": f"no report yet: run `tally report {run.run_dir}`"}
    except OSError as exc:
        return {"blocks": None, "hint": f"{path}: cannot read the report ({exc.strerror})"}
    return {"blocks": parse_markdown(text, run.run_dir), "hint": None}


def parse_markdown(text: str, run_dir: Path) -> list[Block]:
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line:
            continue
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            blocks.append({"type": "heading", "level": min(level, 4), "text": line[level:].strip()})
        elif line.startswith("|"):
            rows = [line]
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(lines[i].strip())
                i += 1
            blocks.append(_table(rows))
        elif line.startswith("- "):
            items = [line[2:]]
            while i < len(lines) and lines[i].strip().startswith("- "):
                items.append(lines[i].strip()[2:])
                i += 1
            blocks.append({"type": "list", "items": items})
        elif (m := _IMAGE.match(line)) is not None:
            name = m.group(2)
            ok = plot_path(run_dir, name) is not None
            blocks.append({"type": "image", "alt": m.group(1), "name": name if ok else None})
        else:
            blocks.append({"type": "paragraph", "text": line})
    return blocks


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _table(rows: list[str]) -> Block:
    header = _cells(rows[0])
    body = [_cells(r) for r in rows[1:] if not set(r) <= set("|-: ")]
    return {"type": "table", "header": header, "rows": body}


def plot_path(run_dir: Path, name: str) -> Path | None:
    """The plot `name` if it is a PNG file directly inside `run_dir`; None otherwise."""
    if not _PLOT_NAME.match(name):
        return None
    root = run_dir.resolve()
    path = (root / name).resolve()
    if path.parent != root or not path.is_file():
        return None
    return path
