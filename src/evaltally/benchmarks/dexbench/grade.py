"""DexBench grading: pure functions over export rows (plain dicts; docs/dexbench.md, "Metrics").

A row is one planned call: ``model``, ``benchmark``, ``item_id``, ``sample``, ``status``,
``parsed``, ``raw_text`` and the oracle fields ``task`` (``forward`` | ``backward``),
``source``, ``covered_lines`` (forward), ``target_line`` (backward) and ``verification`` (the
hook's verdict ``{status, detail: {code, message}, reason, verifier}``, or null). Rates are
fractions in [0, 1].

Intention to evaluate: every planned instance is in every denominator, with ``samples`` planned
answers per task; a call that failed, was blocked, is unfinished, did not parse, or (backward)
has no passing verdict scores 0. Per (benchmark, model, source):

- forward exact: the parsed set equals the covered lines. Jaccard: |A & B| / |A | B| (1 for two
  empty sets), 0 without a parsed answer; ``jaccard@1`` is sample 1's, ``jaccard_best`` the best
  of the samples.
- backward success: the newest verdict on the answer is ``passed``.
- dual, three readings: ``same_sample`` (the release's: forward exact and backward success in
  the same sample; pass@k = some sample among the first k), ``any_any`` (some forward exact
  among the first k and some backward success among the first k), ``unbiased`` (the estimator
  1 - C(n-c, k) / C(n, k) over the n planned samples with c same-sample successes).
  pass@1 reads sample 1 (index 0), pass@k the first k; both are None when fewer are planned.
- coverage = answered (ok or parse_error) / planned calls; parse-failure rate = parse_error /
  planned; parse outcomes re-read from ``raw_text`` with the benchmark's own parsers.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from math import comb
from typing import Any

from evaltally.errors import DataError

from .parse import outcome_of, parse_backward, parse_forward

KS = (1, 5)
SOURCE_ORDER = ("cruxeval", "humaneval", "pythonsaga")
FORWARD, BACKWARD = "forward", "backward"
_REQUIRED = ("model", "benchmark", "item_id", "sample", "status", "task", "source")

Row = Mapping[str, Any]


def jaccard(predicted: Iterable[int], truth: Iterable[int]) -> float:
    a, b = set(predicted), set(truth)
    return 1.0 if not a | b else len(a & b) / len(a | b)


def _predicted(row: Row) -> list[int] | None:
    parsed = row.get("parsed")
    if row["status"] != "ok" or not isinstance(parsed, dict):
        return None
    lines = parsed.get("executed_lines")
    return lines if isinstance(lines, list) else None


def forward_scores(row: Row) -> tuple[bool, float]:
    """(exact match, Jaccard) of a forward row; (False, 0.0) without a parsed answer."""
    predicted = _predicted(row)
    if predicted is None:
        return False, 0.0
    truth = row.get("covered_lines") or []
    return set(predicted) == set(truth), jaccard(predicted, truth)


def backward_success(row: Row) -> bool:
    verification = row.get("verification")
    return (
        row["status"] == "ok"
        and isinstance(verification, Mapping)
        and verification.get("status") == "passed"
    )


def verdict_code(verification: Mapping[str, Any]) -> str:
    """Why a verdict is what it is: DexBench's code (``reached``, ``not_a_literal``, ...), or
    the hook's status when the check itself failed (``error``)."""
    detail = verification.get("detail")
    if isinstance(detail, Mapping) and "code" in detail:
        return str(detail["code"])
    return str(verification.get("status"))


def pass_at(flags: Sequence[bool], k: int) -> bool | None:
    """Some success among the first ``k`` samples; None when fewer than ``k`` are planned."""
    return any(flags[:k]) if len(flags) >= k else None


def unbiased_pass_at(n: int, c: int, k: int) -> float | None:
    """The unbiased pass@k estimator from n samples with c successes (None if n < k)."""
    if n < k:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def _mean(values: Iterable[float | bool | None]) -> float | None:
    got = [float(v) for v in values if v is not None]
    return sum(got) / len(got) if got else None


def check_row(row: Row) -> None:
    """Raise ValueError naming what a DexBench export row lacks."""
    missing = [k for k in _REQUIRED if k not in row]
    if missing:
        raise ValueError(f"a DexBench export row lacks {', '.join(missing)}")
    if row["task"] not in (FORWARD, BACKWARD):
        raise ValueError(f"task must be forward or backward, not {row['task']!r}")


def _flags(by_sample: Mapping[int, Row], samples: int, score: Any) -> list[bool]:
    return [bool(score(by_sample[s])) if s in by_sample else False for s in range(samples)]


def _pass_block(per_instance: Sequence[Sequence[bool]], samples: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in KS:
        out[f"pass@{k}"] = _mean(pass_at(f, k) for f in per_instance) if samples >= k else None
        out[f"unbiased@{k}"] = _mean(unbiased_pass_at(samples, sum(f), k) for f in per_instance)
    return out


def _task_stats(rows: Sequence[Row], parser: Any) -> dict[str, Any]:
    statuses = Counter(r["status"] for r in rows)
    outcomes = Counter(
        outcome_of(parser(r.get("raw_text") or "")) for r in rows if r["status"] == "parse_error"
    )
    n = len(rows)
    return {
        "calls": n,
        "statuses": dict(sorted(statuses.items())),
        "coverage": (statuses["ok"] + statuses["parse_error"]) / n if n else None,
        "parse_failure_rate": statuses["parse_error"] / n if n else None,
        "parse_outcomes": dict(sorted(outcomes.items())),
    }


def _verification_stats(rows: Sequence[Row]) -> dict[str, Any]:
    verdicts: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    sandboxes: Counter[str] = Counter()
    for r in rows:
        if r["status"] != "ok":
            continue
        v = r.get("verification")
        if not isinstance(v, Mapping):
            verdicts["unverified"] += 1
            continue
        verdicts[str(v.get("status"))] += 1
        reasons[verdict_code(v)] += 1
        detail = v.get("detail")
        if isinstance(detail, Mapping) and detail.get("sandbox"):
            sandboxes[str(detail["sandbox"])] += 1
    return {
        "verdicts": dict(sorted(verdicts.items())),
        "reasons": dict(sorted(reasons.items())),
        "sandboxes": dict(sorted(sandboxes.items())),
    }


def _per_instance(
    by_item: Mapping[str, Mapping[str, Mapping[int, Row]]], samples: int
) -> dict[str, list[list[Any]]]:
    """Per instance (sorted ids), per sample: forward exact, Jaccard, backward success."""
    out: dict[str, list[list[Any]]] = {"exact": [], "jaccard": [], "backward": []}
    for item in sorted(by_item):
        fwd, bwd = by_item[item].get(FORWARD, {}), by_item[item].get(BACKWARD, {})
        scores = [forward_scores(fwd[s]) if s in fwd else (False, 0.0) for s in range(samples)]
        out["exact"].append([e for e, _ in scores])
        out["jaccard"].append([j for _, j in scores])
        out["backward"].append([s in bwd and backward_success(bwd[s]) for s in range(samples)])
    return out


def _dual(exact: Sequence[list[bool]], back: Sequence[list[bool]], samples: int) -> dict[str, Any]:
    same = [
        [f and b for f, b in zip(fs, bs, strict=True)] for fs, bs in zip(exact, back, strict=True)
    ]
    block = _pass_block(same, samples)
    any_any = {
        f"pass@{k}": _mean(
            (pass_at(fs, k) and pass_at(bs, k)) if samples >= k else None
            for fs, bs in zip(exact, back, strict=True)
        )
        for k in KS
    }
    return {
        "same_sample": {f"pass@{k}": block[f"pass@{k}"] for k in KS},
        "any_any": any_any,
        "unbiased": {f"pass@{k}": block[f"unbiased@{k}"] for k in KS},
    }


def _group(rows: Sequence[Row], samples: int) -> dict[str, Any]:
    by_item: dict[str, dict[str, dict[int, Row]]] = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        by_item[r["item_id"]][r["task"]][int(r["sample"])] = r
    per = _per_instance(by_item, samples)
    forward_rows = [r for r in rows if r["task"] == FORWARD]
    backward_rows = [r for r in rows if r["task"] == BACKWARD]
    forward = backward = dual = None
    if forward_rows:
        forward = {
            **_pass_block(per["exact"], samples),
            "jaccard@1": _mean(j[0] for j in per["jaccard"]),
            "jaccard_best": _mean(max(j) for j in per["jaccard"]),
            **_task_stats(forward_rows, parse_forward),
        }
    if backward_rows:
        backward = {
            **_pass_block(per["backward"], samples),
            **_task_stats(backward_rows, parse_backward),
            "verification": _verification_stats(backward_rows),
        }
    if forward_rows and backward_rows:
        dual = _dual(per["exact"], per["backward"], samples)
    return {
        "instances": len(by_item),
        "samples": samples,
        "forward": forward,
        "backward": backward,
        "dual": dual,
    }


def _source_key(source: str) -> tuple[int, str]:
    order = SOURCE_ORDER.index(source) if source in SOURCE_ORDER else len(SOURCE_ORDER)
    return order, source


def grade_rows(rows: Iterable[Row]) -> dict[str, Any]:
    """Every DexBench metric from export rows alone (JSON-serializable)."""
    grouped: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    samples: dict[str, int] = defaultdict(int)
    for index, row in enumerate(rows):
        try:
            check_row(row)
        except ValueError as exc:
            raise DataError(f"{row.get('call_id') or f'row {index + 1}'}: {exc}") from None
        grouped[(row["benchmark"], row["model"], row["source"])].append(row)
        samples[row["benchmark"]] = max(samples[row["benchmark"]], int(row["sample"]) + 1)
    groups = []
    for bench, model, source in sorted(grouped, key=lambda k: (k[0], k[1], _source_key(k[2]))):
        body = _group(grouped[(bench, model, source)], samples[bench])
        groups.append({"benchmark": bench, "model": model, "source": source, **body})
    return {"benchmark_kind": "dexbench", "ks": list(KS), "groups": groups}
