"""The estimator's report section, from export rows alone (docs/scae.md, "The replay
estimator"): per chain the hybrid estimate (estimate.py); per model the families of tests
with BH-FDR at q = 0.10, the instrument's coarseness (replay variance, zero-variance points,
degenerate chains, entropy) and the score against the certified first wrong call, with
chain-level bootstrap intervals.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, ClassVar

from evaltally.benchmarks.fork.stats import parse_bucket_spec
from evaltally.benchmarks.scae.cte_judge import REFERENCE_STATEMENT
from evaltally.report.bootstrap import mean_interval
from evaltally.report.fdr import FDR_Q, bh_adjust
from evaltally.report.section import GradeSettings, Section
from evaltally.report.tables import Table, number

from .estimate import INTERVENTION, OBSERVATIONAL, Arm, ChainRows, estimate_chain
from .stats import spearman

BLAME_STATEMENT = (
    "Scored against the certified first wrong call: the segment holding the largest negative "
    "contribution against the segment holding the first call whose prediction differs from "
    "the service's true response. " + REFERENCE_STATEMENT
)


class EstimateGrader:
    legacy_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.chains: dict[tuple[str, str], ChainRows] = {}

    def add(self, row: dict[str, Any]) -> None:
        e = row["estimate"]
        key = (str(row["model"]), str(e["parent_chain"]))
        chain = self.chains.get(key)
        if chain is None:
            info = {k: v for k, v in e.items() if k not in ("at", "arm", "replay", "alternative")}
            info["scenario_id"] = row.get("scenario_id")
            chain = self.chains[key] = ChainRows({**info, "alternatives": {}})
        at, arm, replay = int(e["at"]), str(e["arm"]), int(e["replay"])
        chain.info["alternatives"][str(at)] = e["alternative"]
        step = int(row["parent_step"])
        calls = chain.arms.setdefault((at, arm, replay), Arm()).calls
        if step in calls:
            raise ValueError(f"chain {e['parent_chain']} {arm} {replay} at {at}: step {step} twice")
        status = str(row["status"])
        calls[step] = (status, row.get("parsed") if status == "ok" else None, row["target"])
        rec = row["recorded"]
        chain.recorded[step] = (str(rec["status"]), rec.get("parsed"))

    def section(self, settings: GradeSettings) -> Section:
        models: dict[str, list[dict[str, Any]]] = {}
        for (model, _), rows in sorted(self.chains.items()):
            spec = parse_bucket_spec(str(rows.info["bucket"]))
            models.setdefault(model, []).append(estimate_chain(rows, spec))
        out = {m: model_summary(chains, settings) for m, chains in models.items()}
        tables = [summary_table(out), blame_table(out), segments_table(out)]
        intro = (
            "Step contributions of recorded CTE free rollouts (SCAE, Algorithm 1 and equation "
            "14, at segment level): at each estimation point the continuation is replayed from "
            "the recorded prefix; a point whose probe replays realise more than tau_H nats of "
            "action entropy is estimated observationally (the segment's change in mean Y), one "
            "without is estimated by intervention (the recorded action against a substituted "
            "alternative). Tests: exact permutation tests (Wilcoxon signed-rank against the "
            f"recorded Y, no p below n = 6), BH-FDR at q = {FDR_Q:g} per family; intervals: "
            f"chain-level bootstrap. {BLAME_STATEMENT}"
        )
        return Section(intro, tables, {"models": out, "reference": BLAME_STATEMENT})


def _mean_of(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def _cell(values: Sequence[float], settings: GradeSettings) -> dict[str, Any]:
    lo, hi = mean_interval(values, seed=settings.seed, resamples=settings.resamples,
                           level=settings.level)  # fmt: skip
    return {"value": sum(values) / len(values) if values else None, "lo": lo, "hi": hi,
            "n": len(values)}  # fmt: skip


def model_summary(chains: list[dict[str, Any]], settings: GradeSettings) -> dict[str, Any]:
    segments = [s for c in chains for s in c["segments"]]
    families: dict[str, Any] = {}
    for family in (OBSERVATIONAL, INTERVENTION):
        mine = [s for s in segments if s["branch"] == family]
        qs = bh_adjust([s["p"] for s in mine])
        for s, q in zip(mine, qs, strict=True):
            s["q"] = q
            s["significant"] = q is not None and q <= FDR_Q
        families[family] = {
            "segments": len(mine),
            "tested": sum(s["p"] is not None for s in mine),
            "uncorrected_05": sum(s["p"] is not None and s["p"] < 0.05 for s in mine),
            "significant": sum(s["significant"] for s in mine),
        }
    points = [p for c in chains for p in c["points"]]
    probed = [p for p in points if p["entropy"] is not None]
    variances = [p["replay_variance"] for p in points if p["replay_variance"] is not None]
    scored = [c["blame"] for c in chains if c["blame"]["scored"]]
    residuals = [abs(c["telescoping_residual"]) for c in chains
                 if c["telescoping_residual"] is not None]  # fmt: skip
    return {
        "chains": chains,
        "families": families,
        "n_chains": len(chains),
        "n_points": len(points),
        "positive_entropy": _share([p["entropy"] > 0 for p in probed]),
        "entropy_position_rho": spearman(
            [p["position"] for p in probed], [p["entropy"] for p in probed]
        ),
        "branches": {b: sum(p["branch"] == b for p in points)
                     for b in (OBSERVATIONAL, INTERVENTION)},
        "median_replay_variance": statistics.median(variances) if variances else None,
        "zero_variance_points": _share([v == 0 for v in variances]),
        "degenerate_chains": _share([c["degenerate"] for c in chains]),
        "telescoping_max_residual": max(residuals) if residuals else None,
        "v_first": _cell([c["v_first"] for c in chains if c["v_first"] is not None], settings),
        "blame": {
            "scored": len(scored),
            "unscored": len(chains) - len(scored),
            "exact": _cell([float(b["exact"]) for b in scored], settings),
            "within_one": _cell([float(b["within_one"]) for b in scored], settings),
            "signed": _cell([float(b["signed"]) for b in scored], settings),
            "chance_exact": _mean_of([b["chance_exact"] for b in scored]),
        },
    }  # fmt: skip


def _ci(cell: dict[str, Any]) -> str:
    if cell["value"] is None:
        return "-"
    if cell["lo"] is None:
        return number(cell["value"])
    return f"{cell['value']:.3f} [{cell['lo']:.3f}, {cell['hi']:.3f}]"


def summary_table(models: dict[str, dict[str, Any]]) -> Table:
    rows = []
    for model, s in models.items():
        fam = s["families"]
        rows.append(
            (model, str(s["n_chains"]), str(s["n_points"]),
             f"{s['branches'][OBSERVATIONAL]}/{s['branches'][INTERVENTION]}",
             number(s["positive_entropy"]), number(s["entropy_position_rho"], "+.3f"),
             number(s["median_replay_variance"], ".4f"), number(s["zero_variance_points"]),
             number(s["degenerate_chains"]), number(s["telescoping_max_residual"], ".1e"),
             f"{fam[OBSERVATIONAL]['significant']}/{fam[OBSERVATIONAL]['tested']}",
             f"{fam[INTERVENTION]['significant']}/{fam[INTERVENTION]['tested']}")
        )  # fmt: skip
    return Table(
        "SCAE estimator: summary",
        ("model", "chains", "points", "obs/int", "H > 0", "rho(H, pos)", "median var",
         "zero var", "degenerate", "telescoping", "obs sig/tested", "int sig/tested"),
        rows,
        "obs/int: points per branch; H > 0: share of points whose probe entropy is positive; "
        "rho: its rank correlation with normalised position; var: replay variance of Y; "
        "degenerate: chains whose every contribution is 0; telescoping: largest |sum of "
        "observational contributions - (Y - v_0)|; sig: significant after BH-FDR at q = 0.10.",
        left=1,
    )  # fmt: skip


def blame_table(models: dict[str, dict[str, Any]]) -> Table:
    rows = []
    for model, s in models.items():
        b = s["blame"]
        rows.append((model, str(b["scored"]), str(b["unscored"]), _ci(b["exact"]),
                     _ci(b["within_one"]), _ci(b["signed"]),
                     number(b["chance_exact"])))  # fmt: skip
    return Table(
        "SCAE estimator: against the certified first wrong call",
        ("model", "chains scored", "not scored", "exact segment", "within 1 segment",
         "signed distance", "uniform chance"),
        rows,
        "The segment of the largest negative contribution against the segment holding the "
        "certified first wrong call; signed distance in segments (negative: earlier); uniform "
        "chance: mean 1/(number of segments). Not scored: no wrong call, or no negative "
        "contribution. 95% chain-level bootstrap intervals.",
        left=1,
    )  # fmt: skip


def segments_table(models: dict[str, dict[str, Any]]) -> Table:
    rows = []
    for model, s in models.items():
        for c in s["chains"]:
            for g in c["segments"]:
                point = c["points"][g["index"]]
                mark = "*" if g.get("significant") else ""
                rows.append(
                    (model, c["parent_chain"][:12], f"{g['from']}-{g['to'] - 1}",
                     g["branch"] or "-", number(point["entropy"]), number(g["v_from"]),
                     number(g["v_to"]), number(g["delta"], "+.4f"), number(g["p"], ".3g"),
                     number(g.get("q"), ".3g") + mark)
                )  # fmt: skip
    return Table(
        "SCAE estimator: segments",
        ("model", "chain", "calls", "branch", "H (nats)", "v from", "v to", "delta", "p", "q"),
        rows,
        "calls: the segment's calls (0-based); H: probe entropy at its first call; delta: the "
        "branch's contribution; q: BH-FDR within the branch's family, * significant at 0.10.",
        left=4,
    )  # fmt: skip
