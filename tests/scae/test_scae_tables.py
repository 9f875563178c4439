"""The summary and its report tables (markdown and terminal) from judge rows."""

from __future__ import annotations

import io

from rich.console import Console
from scae_kit import pair_rows, prov

from evaltally.benchmarks.scae.rows import JudgeRow
from evaltally.benchmarks.scae.summary import summarize
from evaltally.benchmarks.scae.tables import all_tables
from evaltally.report.tables import to_markdown, to_rich


def rows() -> list[JudgeRow]:
    out = []
    for i in range(6):
        out += pair_rows(f"e{i}", "judge-[bold]x", 5, 4, 2, prov("-0O0-0-1-0"))
        out += pair_rows(f"e{i}", "judge-y", 5, 3, 3, prov("-0O0-0-1-0"))
    out += pair_rows("e9", "judge-y", 5, None, 3, prov("-0O0-0-1-0"), full_status="unparsable")
    return out


def test_summary_tables_render_as_markdown() -> None:
    summary = summarize(rows(), seed=0, resamples=200, permutations=200)
    assert list(summary["judges"]) == ["judge-[bold]x", "judge-y"]
    md = "\n".join(to_markdown(t) for t in all_tables(summary))
    # The uniform null at T = 5, k = 3: (5 - 3) / 10.
    row = "| judge-[bold]x | 6 | 0.400 | 0.800 | +0.400 | [+0.400, +0.400] | +0.200 | +0.400 |"
    assert row + " 6/0/0 |" in md
    assert "| judge-y | full | 7 | 6 | 0 | 1 | 0 | 0.600 |" in md
    assert "| judge-y | prefix | 7 | 7 | 0 | 0 | 0 | 0.600 |" in md  # e9's prefix answer counts
    assert "| judge-y | 6 | 0.600 | 0.600 | +0.000 |" in md and "| 0/0/6 | 0.000 | - |" in md
    assert "### Zero-LLM rules against the full-trace judge" in md
    assert "| judge-[bold]x | Last gold-provenance step | 1.000 | 0.200 | +0.800 |" in md
    assert "### Across judges (common episodes)" in md
    assert "6 common episodes; enrichment baseline 0.400" in md
    assert "judge-[bold]x: within-class chance 0.500 (2.000 gold-provenance steps" in md
    assert "best rule / within-class chance 2.00." in md


def test_summary_tables_render_in_the_terminal_without_markup() -> None:
    summary = summarize(rows(), seed=0, resamples=50, permutations=50)
    buf = io.StringIO()
    console = Console(file=buf, width=250, color_system=None)
    for table in all_tables(summary):
        console.print(to_rich(table))
    assert "judge-[bold]x" in buf.getvalue()  # a model key is text, never rich markup
