"""Grade an export file: metrics per (model, benchmark, protocol), tables, plots, audit.

Both `tally grade EXPORT` and `tally report RUN` end here; `report` only exports first. The
JSON written is the complete result; `groups` is what the two commands must agree on exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from evaltally.audit import reasoning_against_request
from evaltally.benchmarks.cte.grade import summarize
from evaltally.errors import DataError
from evaltally.report import plots, tables
from evaltally.report.collect import collect, vm_by_index

PROTOCOL_RANK = {"answers_revealed": 0, "no_feedback": 1, "free_rollout": 2}


@dataclass
class ReportResult:
    data: dict[str, Any]
    tables: list[tables.Table]
    audit: list[str]
    markdown: str
    files: list[Path] = field(default_factory=list)


def reasoning_audit(used: Mapping[str, int], requested: Mapping[str, str] | None) -> list[str]:
    """One line per model that used reasoning tokens; louder when its config said 'off'."""
    lines = []
    for model, tokens in sorted(used.items()):
        if tokens <= 0:
            continue
        mode = (requested or {}).get(model)
        if reasoning_against_request(mode, tokens):
            lines.append(
                f'WARNING {model}: reasoning = "off" in the run\'s config, but the API reported '
                f"{tokens:,} reasoning tokens; its numbers are not a no-reasoning result"
            )
        else:
            lines.append(
                f"{model}: {tokens:,} reasoning tokens reported (requested mode: "
                f"{mode or 'unknown'})"
            )
    return lines


def grade_export(
    export: Path,
    out_dir: Path | None = None,
    *,
    requested_reasoning: Mapping[str, str] | None = None,
    resamples: int = 2000,
    seed: int = 0,
    plot: bool = True,
) -> ReportResult:
    collected = collect(Path(export))
    if not collected.groups:
        raise DataError(f"{export}: no CTE-Bench rows (rows need the fields of docs/export.md)")
    keys = sorted(collected.groups, key=lambda k: (k[0], k[1], PROTOCOL_RANK.get(k[2], 9), k[2]))
    groups: list[dict[str, Any]] = []
    for model, bench, protocol in keys:
        calls = collected.groups[(model, bench, protocol)]
        groups.append(
            {
                "model": model,
                "benchmark": bench,
                "protocol": protocol,
                "summary": summarize(calls, seed=seed, resamples=resamples),
                "vm_by_index": vm_by_index(calls),
            }
        )
    audit = reasoning_audit(collected.reasoning_tokens, requested_reasoning)
    data: dict[str, Any] = {
        "report_version": 1,
        "prompt_versions": sorted(collected.prompt_versions),
        "bootstrap": {"resamples": resamples, "seed": seed, "level": 0.95},
        "groups": groups,
        "reasoning_tokens": dict(sorted(collected.reasoning_tokens.items())),
        "reasoning_audit": audit,
        "rows_not_graded": collected.skipped_rows,
    }
    made = tables.all_tables(groups)
    md = _markdown(made, audit, data)
    result = ReportResult(data, made, audit, md)
    if out_dir is not None:
        result.files = _write(result, Path(out_dir), plot)
    return result


def _markdown(made: list[tables.Table], audit: list[str], data: Mapping[str, Any]) -> str:
    parts = [
        "# CTE-Bench report",
        "",
        f"Prompt version(s): {', '.join(data['prompt_versions']) or '-'}; 95% intervals from "
        f"{data['bootstrap']['resamples']:,} scenario-bootstrap resamples "
        f"(seed {data['bootstrap']['seed']}). Every planned call is in the denominator: "
        "failed, blocked, unfinished and unparsed calls count wrong.",
        "",
    ]
    parts += [tables.to_markdown(t) for t in made]
    parts += ["### Reasoning audit", ""]
    parts += [f"- {line}" for line in audit] or ["- no model reported reasoning tokens"]
    parts += ["", "![VM by future call](vm_by_index.png)", "",
              "![Effect-step VM](effect_step_vm.png)", ""]  # fmt: skip
    return "\n".join(parts)


def _write(result: ReportResult, out_dir: Path, plot: bool) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    files = [out_dir / "report.json", out_dir / "report.md"]
    opts = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    files[0].write_bytes(orjson.dumps(result.data, option=opts) + b"\n")
    files[1].write_text(result.markdown, encoding="utf-8")
    if plot:
        files.append(plots.vm_by_index(result.data["groups"], out_dir / "vm_by_index.png"))
        files.append(
            plots.effect_vm_intervals(result.data["groups"], out_dir / "effect_step_vm.png")
        )
    return files
