"""Writing a report: report.json (complete), report.md (sections, audit, data sources) and
each section's figures, into one directory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from evaltally.report.section import Section
from evaltally.report.tables import to_markdown


def _source(f: Mapping[str, Any]) -> str:
    # A parent run's ledger is hashed by what was taken from it, never as the file's SHA-256.
    what = f"SHA-256 of {f['hashed']}" if f.get("hashed") else "SHA-256"
    return f"`{f['path']}` ({what} `{f['sha256']}`)"


def markdown(
    sections: Sequence[tuple[str, Section]], audit: Sequence[str], data: Mapping[str, Any]
) -> str:
    parts = ["# Evaluation report", ""]
    for title, s in sections:
        parts += [f"## {title}", "", s.intro, ""]
        parts += [to_markdown(t) for t in s.tables]
        for fig in s.figures:
            parts += [f"![{fig.caption}]({fig.filename})", ""]
    parts += ["## Data sources", ""]
    sources = data.get("data_sources") or {}
    for label, source in sources.items():
        files = source.get("files") or []
        where = "; ".join(_source(f) for f in files) or "-"
        parts.append(f"- {label} ({source.get('kind')}): {where}")
    if not sources:
        parts.append("- not recorded (`tally report RUN` shows what the run recorded)")
    parts += ["", "## Reasoning audit", ""]
    parts += [f"- {line}" for line in audit] or ["- no model reported reasoning tokens"]
    return "\n".join(parts) + "\n"


def write_report(
    data: Mapping[str, Any],
    md: str,
    sections: Sequence[tuple[str, Section]],
    out_dir: Path,
    plot: bool,
) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    files = [out_dir / "report.json", out_dir / "report.md"]
    opts = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    files[0].write_bytes(orjson.dumps(data, option=opts) + b"\n")
    files[1].write_text(md, encoding="utf-8")
    if plot:
        files += [fig.draw(out_dir / fig.filename) for _, s in sections for fig in s.figures]
    return files
