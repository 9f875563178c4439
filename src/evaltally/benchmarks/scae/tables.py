"""SCAE report tables (terminal and markdown through `evaltally.report.tables`).

Values are fractions with three decimals as in the paper (0.900, +0.537); p-values with two
significant digits (1.1e-16); "-" marks an undefined value (empty denominator).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaltally.report.tables import Table, number

from .conditions import CONDITIONS
from .cte_judge import REFERENCE_STATEMENT


def signed(x: float | None) -> str:
    return "-" if x is None else f"{x:+.3f}"


def interval(cell: Mapping[str, float | None]) -> str:
    lo, hi = cell.get("ci_low"), cell.get("ci_high")
    return "-" if lo is None or hi is None else f"[{lo:+.3f}, {hi:+.3f}]"


def pvalue(p: float | None) -> str:
    return "-" if p is None else f"{p:.2g}"


def fdr_p(d: Mapping[str, Any]) -> str:
    """A sign test's p-value, marked * when it survives BH-FDR across the judges."""
    return pvalue(d["sign_p"]) + ("*" if d.get("significant") else "")


def mark(flag: bool) -> str:
    return "yes" if flag else "no"


def answers_table(summary: Mapping[str, Any]) -> Table:
    rows = []
    for judge, s in summary["judges"].items():
        for cond in CONDITIONS:
            c = s["counts"][cond]
            rows.append(
                (
                    judge,
                    cond,
                    str(sum(c.values())),
                    str(c["ok"]),
                    str(c["out_of_range"]),
                    str(c["unparsable"]),
                    str(c["failed"] + c["blocked"] + c["unfinished"]),
                    number(s["positions"][cond]),
                )
            )
    return Table(
        "Judge answers",
        (
            "judge",
            "condition",
            "planned",
            "ok",
            "out of range",
            "unparsable",
            "no answer",
            "mean pos",
        ),
        rows,
        "out of range: a step the judge was not shown; no answer: failed, blocked or unfinished; "
        "mean pos: mean t/T over every ok answer of the condition.",
    )


def displacement_table(summary: Mapping[str, Any]) -> Table:
    rows = []
    for judge, s in summary["judges"].items():
        d = s["displacement"]
        rows.append(
            (
                judge,
                str(d["n"]),
                number(d["pos_prefix"]),
                number(d["pos_full"]),
                signed(d["mean"]["value"]),
                interval(d["mean"]),
                signed(d.get("uniform_null")),
                signed(d["median"]),
                f"{d['later']}/{d['earlier']}/{d['ties']}",
                number(d["share_later"]),
                fdr_p(d),
                pvalue(d.get("sign_q")),
            )
        )
    return Table(
        "Collider displacement (full trace minus prefix)",
        ("judge", "episodes", "pos prefix", "pos full", "displacement", "95% CI", "uniform null",
         "median", "later/earlier/ties", "share later", "sign p", "q (BH)"),
        rows,
        "pos = t/T over episodes answered in both conditions; sign test two-sided, exact, "
        "ties excluded, BH-FDR across the judges (* = q <= 0.10); 95% CI from the episode "
        "bootstrap; uniform null: the displacement of a "
        "judge picking uniformly among the steps it is shown, mean (T - k)/2T (not zero: the "
        "prefix judge cannot reach later steps).",
    )  # fmt: skip


def enrichment_table(summary: Mapping[str, Any]) -> Table | None:
    rows = []
    for judge, s in summary["judges"].items():
        if "enrichment" not in s:
            continue
        e, lb = s["enrichment"], s["late_bias"]
        rows.append(
            (
                judge,
                str(e["n"]),
                number(e["rate"]["value"]),
                number(e["baseline"]),
                signed(e["diff"]["value"]),
                interval(e["diff"]),
                mark(e["significant"]),
                str(lb["n"]),
                number(lb["mean"]),
                interval(lb["diff"]),
            )
        )
    if not rows:
        return None
    return Table(
        "Gold-provenance enrichment of the full-trace judge",
        ("judge", "episodes", "on gold prov.", "baseline", "diff", "95% CI", "significant",
         "in class", "lateness", "lateness - 0.5 CI"),
        rows,
        "baseline = mean share of gold-provenance steps per episode (a uniform pick's rate); "
        "lateness = mean (r - 1/2)/m of the blamed step's rank r among m gold-provenance "
        "steps, uniform null 0.5.",
    )  # fmt: skip


def rules_table(summary: Mapping[str, Any]) -> Table | None:
    rows, notes = [], []
    for judge, s in summary["judges"].items():
        if "rules" not in s:
            continue
        r = s["rules"]
        for rule in r["rules"].values():
            rows.append(
                (
                    judge,
                    rule["label"],
                    number(rule["agreement"]),
                    number(r["chance"]),
                    signed(rule["diff"]["value"]),
                    interval(rule["diff"]),
                    mark(rule["significant"]),
                )
            )
        ratio = r["best_over_within_class"]
        notes.append(
            f"{judge}: within-class chance {number(r['within_class_chance'])} "
            f"({number(r['gold_steps_per_episode'])} gold-provenance steps per episode), best rule "
            f"/ within-class chance {'-' if ratio is None else f'{ratio:.2f}'}."
        )
    if not rows:
        return None
    return Table(
        "Zero-LLM rules against the full-trace judge",
        ("judge", "rule", "agreement", "chance", "diff", "95% CI", "significant"),
        rows,
        "chance = mean 1/T (uniform pick among all steps). " + " ".join(notes),
    )


def across_judges_table(summary: Mapping[str, Any]) -> Table | None:
    across = summary.get("across_judges")
    if not across:
        return None
    rows = []
    for judge, s in across["judges"].items():
        d = s["displacement"]
        e = s.get("enrichment")
        rows.append(
            (
                judge,
                signed(d["mean"]["value"]),
                interval(d["mean"]),
                f"{d['later']}/{d['n']}",
                fdr_p(d),
                "-"
                if e is None
                else number(e["rate"]["value"]) + ("*" if e["significant"] else ""),
                "-" if e is None else interval(e["diff"]),
            )
        )
    het = across["heterogeneity"]
    enr = het["enrichment"]
    note = (
        f"{across['n_common']} common episodes; enrichment baseline "
        f"{number(across.get('baseline'))}; * = enrichment interval excludes 0, sign p significant "
        f"after BH-FDR across the judges (q <= 0.10). Between-judge "
        f"heterogeneity (judge labels permuted within episode): displacement "
        f"p = {pvalue(het['displacement']['p'])}"
        + ("" if enr is None else f", enrichment p = {pvalue(enr['p'])}")
        + "."
    )
    return Table(
        "Across judges (common episodes)",
        ("judge", "displacement", "95% CI", "later", "sign p", "enrichment", "diff CI"),
        rows,
        note,
    )


def all_tables(summary: Mapping[str, Any]) -> list[Table]:
    made = [answers_table(summary), displacement_table(summary)]
    for extra in (enrichment_table(summary), rules_table(summary), across_judges_table(summary)):
        if extra is not None:
            made.append(extra)
    return made


def cte_judge_table(scores: Mapping[str, Any]) -> Table:
    """Rows from `cte_judge.score_judges`."""
    rows = []
    for judge, s in scores.items():
        for cond, c in s["conditions"].items():
            rows.append(
                (
                    judge,
                    cond,
                    str(c["planned"]),
                    str(c["answered"]),
                    str(c["reference_visible"]),
                    number(c["hit_rate"]),
                    number(c["within_one"]),
                    signed(c["mean_signed_distance"]),
                    number(c["mean_abs_distance"]),
                )
            )
    return Table(
        "Judges against the certified first wrong call (CTE free rollouts)",
        ("judge", "condition", "chains", "answered", "reference shown", "exact hit",
         "within 1", "mean t - c", "mean |t - c|"),
        rows,
        "c: the executor-certified first wrong call; t: the judge's step; rates over answered "
        "chains. " + REFERENCE_STATEMENT,
    )  # fmt: skip
