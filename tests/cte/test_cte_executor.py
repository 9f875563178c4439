"""In-process executor semantics on a tiny hand-written service."""

from __future__ import annotations

from typing import Any

import pytest

from evaltally.benchmarks.cte import executor as ex
from evaltally.errors import DataError, SandboxError

SOURCE = """class Counter:
    def __init__(self, limit):
        self.limit = limit
        self.counts = {}
        self.seen = set()
        self.log = []
        self.clock = 0

    def hit(self, key):
        n = self.counts.get(key, 0)
        if n >= self.limit:
            return {"error": {"code": "LIMITED"}}
        self.counts[key] = n + 1
        self.seen.add(key)
        self.log.append({"key": key, "at": self.clock})
        return {"key": key, "count": n + 1, "log": self.log}

    def tick(self, delta):
        self.clock += delta
        return {"clock": self.clock}

    def boom(self):
        self.clock += 100
        return {}["missing"]
"""


def record(**over: Any) -> dict[str, Any]:
    patched = ex.apply_edit(SOURCE, 11, 13, ">=", "<")
    rec: dict[str, Any] = {
        "domain": "counter",
        "item_id": "abc",
        "intervention": {
            "kind": "branch_inversion",
            "line_number": 11,
            "col_offset": 13,
            "original_span": ">=",
            "modified_span": "<",
            "description": "flip",
        },
        "patched_source": patched,
        "trace_prefix": [{"op": "hit", "args": {"k": "a"}, "response": {}}] * 2,
        "trace_original": [{"op": "hit", "args": {"k": "a"}, "response": {}}] * 2,
        "trace_counterfactual": [{"op": "hit", "args": {"k": "a"}, "response": {}}] * 2,
        "final_state_original": {"limit": 3},
    }
    rec.update(over)
    return rec


def test_edit_and_revert_roundtrip() -> None:
    patched = ex.apply_edit(SOURCE, 11, 13, ">=", "<")
    assert "if n < self.limit:" in patched
    rec = record()
    assert ex.revert_edit(patched, rec["intervention"]) == SOURCE
    with pytest.raises(DataError, match="does not hold"):
        ex.apply_edit(SOURCE, 11, 12, ">=", "<")
    with pytest.raises(DataError, match="outside"):
        ex.apply_edit(SOURCE, 999, 0, "x", "y")


def test_state_roundtrip_sets_and_constructor_args() -> None:
    cls = ex.load_service_class(SOURCE)
    assert ex.constructor_args(cls, {"limit": 2, "clock": 5}) == {"limit": 2}
    svc = ex.new_service(cls, {"limit": 2})
    ex.run_calls(svc, [{"op": "hit", "args": {"key": "b"}}, {"op": "hit", "args": {"key": "a"}}])
    state = ex.get_state(svc)
    assert state["seen"] == ["a", "b"]  # sets serialize as sorted lists
    again = ex.load_service(cls, state)
    assert vars(again)["seen"] == {"a", "b"}
    assert ex.get_state(again) == state
    with pytest.raises(DataError, match="limit"):
        ex.constructor_args(cls, {})


def test_responses_copied_when_produced_unless_late() -> None:
    cls = ex.load_service_class(SOURCE)
    calls = [{"op": "hit", "args": {"key": "a"}}, {"op": "hit", "args": {"key": "b"}}]
    eager = ex.run_calls(ex.new_service(cls, {"limit": 5}), calls)
    late = ex.run_calls(ex.new_service(cls, {"limit": 5}), calls, late_serialization=True)
    assert len(eager[0]["log"]) == 1
    assert len(late[0]["log"]) == 2  # the quirk: the list's final contents


def test_exception_becomes_service_exception_and_keeps_mutation() -> None:
    svc = ex.new_service(ex.load_service_class(SOURCE), {"limit": 1})
    [resp] = ex.run_calls(svc, [{"op": "boom", "args": {}}])
    assert resp == {"error": {"code": "SERVICE_EXCEPTION", "message": "KeyError: 'missing'"}}
    assert ex.get_state(svc)["clock"] == 100
    with pytest.raises(DataError, match="public"):
        ex.call(svc, "__init__", {})
    with pytest.raises(DataError, match="no operation"):
        ex.call(svc, "nope", {})


def test_set_state_path_copies() -> None:
    state = {"counts": {"k2:0": 2}, "clock": 1}
    new = ex.set_state_path(state, ["counts", "k2:0"], 5)
    assert new["counts"]["k2:0"] == 5 and state["counts"]["k2:0"] == 2
    with pytest.raises(DataError):
        ex.set_state_path(state, ["nope", "x"], 1)


def test_load_service_class_errors() -> None:
    with pytest.raises(SandboxError, match="one top-level class"):
        ex.load_service_class("x = 1\n")
    with pytest.raises(SandboxError, match="parse"):
        ex.load_service_class("class (:\n")


def test_replay_source_edit_loads_edited_class_from_post_history_state() -> None:
    hit = {"op": "hit", "args": {"key": "a"}, "response": {}}
    rec = record(trace_prefix=[hit] * 3, trace_original=[hit] * 2, trace_counterfactual=[hit] * 2)
    res = ex.replay_record(rec)
    assert res.prefix[-1]["count"] == 3
    assert res.original == [{"error": {"code": "LIMITED"}}] * 2  # limit 3 reached
    assert res.counterfactual[0]["count"] == 4  # the inverted guard admits more hits
    assert res.final_state_original["counts"] == {"a": 3}
    assert res.final_state_cf["counts"] == {"a": 5}


def test_replay_state_intervention_needs_the_unedited_source() -> None:
    hit = {"op": "hit", "args": {"key": "a"}, "response": {}}
    rec = record(
        intervention={"kind": "state_injection", "path": ["counts", "a"], "from_value": 1,
                      "to_value": 3, "description": "overwrite"},
        patched_source=None, trace_prefix=[hit], trace_original=[hit], trace_counterfactual=[hit],
    )  # fmt: skip
    with pytest.raises(DataError, match="unedited"):
        ex.replay_record(rec)
    res = ex.replay_record(rec, unedited_sources={"counter": SOURCE})
    assert res.found_from_value == 1
    assert res.original[0]["count"] == 2
    assert res.counterfactual == [{"error": {"code": "LIMITED"}}]
