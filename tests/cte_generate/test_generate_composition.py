"""The built-in set has Core-v1's composition and the official record format."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from evaltally.benchmarks.cte.generate import COMPOSITION, RECORD_KEYS

SHARED = Path(__file__).resolve().parents[3] / "shared"
OFFICIAL = SHARED / "data" / "cte-bench" / "core_v1.jsonl.gz"
Records = list[dict[str, Any]]


def test_cells_and_totals(builtin_records: Records) -> None:
    cells = Counter((r["domain"], r["intervention"]["kind"]) for r in builtin_records)
    assert cells == Counter({(d, k): n for d, k, n in COMPOSITION})
    assert cells == {
        ("auth", "threshold_change"): 30,
        ("bank", "branch_inversion"): 30,
        ("cart", "branch_inversion"): 30,
        ("filesystem", "branch_inversion"): 30,
        ("reservation", "branch_inversion"): 30,
        ("ratelimiter", "branch_inversion"): 30,
        ("ratelimiter", "threshold_change"): 30,
        ("ratelimiter", "clock_jump"): 30,
        ("ratelimiter", "state_injection"): 15,
    }
    assert len(builtin_records) == 255
    assert sum(min(40, len(r["trace_counterfactual"])) for r in builtin_records) == 10_200


def test_lengths_and_paired_calls(builtin_records: Records) -> None:
    for r in builtin_records:
        source_edit = r["intervention"]["kind"] in ("branch_inversion", "threshold_change")
        # Source edits follow 5/15/35/55 observed calls; a state overwrite "at step k" follows
        # k + 1 observed calls, as the official file records it.
        assert r["prefix_len"] in ((5, 15, 35, 55) if source_edit else (6, 16, 36, 56))
        assert len(r["trace_prefix"]) == r["prefix_len"]
        assert r["prefix_len"] + len(r["trace_original"]) == 100
        strip = [{"op": c["op"], "args": c["args"]} for c in r["trace_original"]]
        assert strip == [{"op": c["op"], "args": c["args"]} for c in r["trace_counterfactual"]]


def test_record_encoding(builtin_records: Records) -> None:
    ids = [r["item_id"] for r in builtin_records]
    assert len(set(ids)) == len(ids)
    for r in builtin_records:
        assert tuple(r) == RECORD_KEYS
        assert re.fullmatch(r"[0-9a-f]{12}", r["item_id"])
        assert r["expected_delay"] is None
        assert isinstance(r["final_violations_cf"], list)
        assert r["reachability"]["accepted"] is True
        for step in r["trace_prefix"] + r["trace_original"] + r["trace_counterfactual"]:
            assert tuple(step) == ("op", "args", "response")
            assert isinstance(step["args"], dict) and isinstance(step["response"], dict)
            if "error" in step["response"]:
                assert isinstance(step["response"]["error"]["code"], str)


def test_same_shapes_as_the_official_file(builtin_records: Records) -> None:
    with gzip.open(OFFICIAL, "rt", encoding="utf-8") as fh:
        official = [json.loads(line) for line in fh]

    def shapes(recs: Records) -> set[tuple[str, str, str, tuple[str, ...]]]:
        out = set()
        for r in recs:
            iv = r["intervention"]
            for key, value in r.items():
                sub = tuple(value) if isinstance(value, dict) else ()
                if key in ("final_state_cf", "final_state_original"):
                    sub = ()  # state attributes are the service's own
                out.add((iv["kind"], key, type(value).__name__, sub))
        return out

    assert [tuple(r) for r in official[:1]] == [RECORD_KEYS]
    assert shapes(builtin_records) == shapes(official)
