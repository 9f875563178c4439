"""Every scenario has an effect, and every intervention is of the admitted kind."""

from __future__ import annotations

import json
from typing import Any

from evaltally.benchmarks.cte import executor as ex
from evaltally.benchmarks.cte.interventions import INVERTED, token_difference
from evaltally.benchmarks.cte.services import service_source

Records = list[dict[str, Any]]


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def test_every_record_changes_some_response(builtin_records: Records) -> None:
    for r in builtin_records:
        pairs = zip(r["trace_original"], r["trace_counterfactual"], strict=True)
        assert any(_canon(o["response"]) != _canon(c["response"]) for o, c in pairs), r["item_id"]


def test_no_counterfactual_raises(builtin_records: Records) -> None:
    for r in builtin_records:
        for step in r["trace_prefix"] + r["trace_original"] + r["trace_counterfactual"]:
            assert step["response"].get("error", {}).get("code") != "SERVICE_EXCEPTION"


def test_source_edits_are_one_token_and_revert_to_the_service(builtin_records: Records) -> None:
    patches = set()
    for r in builtin_records:
        iv = r["intervention"]
        if iv["kind"] not in ("branch_inversion", "threshold_change"):
            assert r["patched_source"] is None
            continue
        original = service_source(r["domain"])
        assert ex.revert_edit(r["patched_source"], iv) == original
        assert token_difference(original, r["patched_source"]) == [
            (iv["original_span"], iv["modified_span"])
        ]
        if iv["kind"] == "branch_inversion":
            assert INVERTED[iv["original_span"]] == iv["modified_span"]
        else:
            assert abs(int(iv["modified_span"]) - int(iv["original_span"])) == 1
        assert r["explanation_truth"] == {
            "line_number": iv["line_number"],
            "original_span": iv["original_span"],
            "modified_span": iv["modified_span"],
        }
        patches.add((r["domain"], iv["line_number"], iv["col_offset"], iv["modified_span"]))
    assert len(patches) >= 49  # at least as varied as Core-v1's 49 distinct patches


def test_state_interventions_start_from_the_true_state(builtin_records: Records) -> None:
    sources = {"ratelimiter": service_source("ratelimiter")}
    for r in builtin_records:
        iv = r["intervention"]
        if iv["kind"] not in ("clock_jump", "state_injection"):
            continue
        res = ex.replay_record(r, unedited_sources=sources)
        assert res.found_from_value == iv["from_value"] != iv["to_value"]
        if iv["kind"] == "clock_jump":
            assert iv["path"] == ["clock"]
        else:
            assert iv["path"][0] == "counters" and len(iv["path"]) == 2
        assert r["explanation_truth"] == {k: iv[k] for k in ("path", "from_value", "to_value")}
        assert r["reachability"]["reason"] == "OBSERVED_ELSEWHERE_IN_REFERENCE"
