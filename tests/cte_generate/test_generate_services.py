"""Our six service sources follow the conventions the executor and the prompts rely on."""

from __future__ import annotations

import ast
import json

import pytest

from evaltally.benchmarks.cte import executor as ex
from evaltally.benchmarks.cte.interventions import (
    BRANCH_INVERSION,
    THRESHOLD_CHANGE,
    source_edit_candidates,
    token_difference,
)
from evaltally.benchmarks.cte.services import DOMAINS, service_path, service_source

CLOCKED = ("auth", "filesystem", "ratelimiter", "reservation")


def test_six_domains() -> None:
    assert DOMAINS == ("auth", "bank", "cart", "filesystem", "ratelimiter", "reservation")
    with pytest.raises(KeyError):
        service_path("payments")


@pytest.mark.parametrize("domain", DOMAINS)
def test_plain_single_class_source(domain: str) -> None:
    source = service_source(domain)
    assert 60 <= len(source.splitlines()) <= 150
    tree = ast.parse(source)
    assert [type(n).__name__ for n in tree.body if isinstance(n, ast.ClassDef)] == ["ClassDef"]
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    # No randomness, wall clock or I/O: the only import is a typing name.
    assert all(isinstance(n, ast.ImportFrom) and n.module == "typing" for n in imports)


@pytest.mark.parametrize("domain", DOMAINS)
def test_loads_constructs_and_serializes(domain: str) -> None:
    cls = ex.load_service_class(service_source(domain))
    svc = ex.new_service(cls, ex.constructor_args(cls, {}))
    state = ex.get_state(svc)
    assert json.loads(json.dumps(state)) == state
    if domain in CLOCKED:
        assert state["clock"] == 0
        assert ex.call(svc, "advance_clock", {"delta": 2})["clock"] == 2
        assert ex.call(svc, "advance_clock", {"delta": -1}) == {"error": {"code": "NEGATIVE_DELTA"}}


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_candidate_edit_is_one_token(domain: str) -> None:
    source = service_source(domain)
    for kind in (BRANCH_INVERSION, THRESHOLD_CHANGE):
        for edit in source_edit_candidates(source, kind):
            patched = edit.apply(source)
            assert token_difference(source, patched) == [(edit.original_span, edit.modified_span)]
            ex.load_service_class(patched)  # still a valid service
