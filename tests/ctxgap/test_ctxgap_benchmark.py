"""CTXGAP as a benchmark kind: its chains, what each step renders, parsing by role, its
options, its oracle export fields and its offline stand-ins, through the real planner."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ctxgap_kit import probe, view, write_sweep

from evaltally.benchmarks.base import StepAnswer
from evaltally.benchmarks.binding import load_benchmarks
from evaltally.benchmarks.ctxgap.benchmark import CtxgapBenchmark
from evaltally.benchmarks.ctxgap.data import load_dataset
from evaltally.benchmarks.registry import get_kind
from evaltally.config import load_config
from evaltally.errors import ConfigError
from evaltally.plan import iter_plan
from evaltally.prompts.ctxgap import (
    ACTOR_PROMPT_VERSION,
    JUDGE_PROMPT_VERSION,
    NOT_IN_DOCUMENT,
    OBSERVER_PROMPT_VERSION,
    render_actor,
    render_judge,
    render_observer,
)
from evaltally.records import PlannedCall, Status


def sweep(path: Path) -> tuple[CtxgapBenchmark, list[PlannedCall]]:
    config = load_config(path)
    benches = load_benchmarks(config)
    bench = benches["ctxgap"]
    assert isinstance(bench, CtxgapBenchmark)
    return bench, list(iter_plan(config, benches))


def answer(text: str | None, status: Status = Status.OK) -> list[StepAnswer]:
    parsed = text.strip() if status is Status.OK and text is not None else None
    return [StepAnswer(0, status, text, parsed)]


def test_the_registry_lists_ctxgap_with_its_cli_and_ten_thousand_resamples() -> None:
    kind = get_kind("ctxgap")
    assert kind.benchmark_class() is CtxgapBenchmark and kind.load_cli() is not None
    assert kind.resamples == 10_000 and kind.title == "CTXGAP"


def test_one_observer_judge_chain_per_planned_probe_and_view(tmp_path: Path) -> None:
    _, calls = sweep(write_sweep(tmp_path, observers=("reference", "dont_know")))
    ds = load_dataset("example")
    units = [(p.probe_id, v.name) for p, v in ds.planned()]
    assert len(units) == 98
    chains: dict[str, list[PlannedCall]] = {}
    for call in calls:
        chains.setdefault(call.chain_id, []).append(call)
    assert len(chains) == 2 * 98
    for observer in ("reference", "dont_know"):
        mine = [c for c in chains.values() if c[0].model == observer]
        assert [(c[0].item_id, c[0].protocol) for c in mine] == units
        for obs, judge in mine:
            version = ACTOR_PROMPT_VERSION if obs.protocol == "actor" else OBSERVER_PROMPT_VERSION
            assert (obs.step, obs.role, obs.spec["prompt_version"]) == (0, "observer", version)
            assert (judge.step, judge.role, judge.model) == (1, "judge", "exact_match")
            assert judge.spec["prompt_version"] == JUDGE_PROMPT_VERSION


def test_observer_sees_question_and_view_and_judge_never_the_view(tmp_path: Path) -> None:
    bench, calls = sweep(write_sweep(tmp_path))
    probes = {p.probe_id: p for p in bench.dataset.probes}
    for call in calls:
        p = probes[call.item_id]
        v = bench.dataset.views[(p.task_id, p.checkpoint)][call.protocol]
        if call.role == "observer" and v.messages is not None:
            # the actor: its own transcript, continued with the probe
            shown = render_actor(question=p.question, transcript=v.messages)
            assert bench.render(call, []) == shown
            assert (
                shown[: len(v.messages)] == list(v.messages) and len(shown) == len(v.messages) + 1
            )
            assert p.question in shown[-1]["content"] and p.reference not in shown[-1]["content"]
            continue
        if call.role == "observer":
            assert bench.render(call, []) == render_observer(question=p.question, view_text=v.text)
            continue
        messages = bench.render(call, answer("  an answer \n"))
        shown = render_judge(question=p.question, reference=p.reference, answer="an answer")
        assert messages == shown
        assert v.text not in str(messages)


def test_the_judge_of_an_empty_answer_is_shown_an_empty_answer(tmp_path: Path) -> None:
    bench, calls = sweep(write_sweep(tmp_path))
    judge = next(c for c in calls if c.role == "judge")
    messages = bench.render(judge, answer("   ", Status.PARSE_ERROR))
    assert "<answer>\n\n</answer>" in messages[-1]["content"]
    with pytest.raises(ValueError, match="needs the observer's answer"):
        bench.render(judge, [])


def test_parse_knows_the_role(tmp_path: Path) -> None:
    bench, calls = sweep(write_sweep(tmp_path))
    observer = next(c for c in calls if c.role == "observer")
    judge = next(c for c in calls if c.role == "judge")
    assert bench.parse(observer, "VERDICT: 1").value == "VERDICT: 1"
    assert bench.parse(observer, " \n").error == "empty answer"
    assert bench.parse(judge, "Right.\nVERDICT: 0.5").value == 0.5
    assert not bench.parse(judge, "an answer").ok


def _predict(bench: CtxgapBenchmark, name: str, call: PlannedCall, earlier: Any) -> str:
    return bench.predictors[name](bench.offline_context(call, earlier))


def test_offline_stand_ins(tmp_path: Path) -> None:
    bench, calls = sweep(write_sweep(tmp_path))
    by_unit = {(c.item_id, c.protocol, c.role): c for c in calls}
    limit_u = by_unit[("t1-cp1-limit", "U", "observer")]
    route_u = by_unit[("t1-cp1-route", "U", "observer")]
    route_judge = by_unit[("t1-cp1-route", "public", "judge")]
    assert _predict(bench, "reference", route_u, []) == "app/routes/search.py"
    assert _predict(bench, "dont_know", route_u, []) == NOT_IN_DOCUMENT
    # The U report states the limit word for word, but never names the route's file.
    assert _predict(bench, "verbatim", limit_u, []) == "100 requests per minute per API key."
    assert _predict(bench, "verbatim", route_u, []) == NOT_IN_DOCUMENT
    judged = _predict(bench, "exact_match", route_judge, answer(" APP/routes/search.py. "))
    assert judged.endswith("VERDICT: 1")
    assert _predict(bench, "exact_match", route_judge, answer("search.py")).endswith("VERDICT: 0")
    with pytest.raises(ValueError, match="answers judge steps only"):
        _predict(bench, "exact_match", route_u, [])
    with pytest.raises(ValueError, match="answers observer steps only"):
        _predict(bench, "reference", route_judge, answer("x"))


def test_export_fields_carry_the_oracle_and_invalid_probes_once_per_binding(
    tmp_path: Path,
) -> None:
    bench, calls = sweep(write_sweep(tmp_path, 'data = "example"\nviews = ["U", "T_full"]'))
    rows = [bench.export_fields(c) for c in calls]
    first = rows[0]
    assert {k: first[k] for k in ("probe_id", "view", "importance", "probe_index")} == {
        "probe_id": "t1-cp1-limit", "view": "U", "importance": 3, "probe_index": 0
    }  # fmt: skip
    assert first["analysis"] == {"views": ["U", "T_full"], "gap": ["U", "T_full"], "variants": None}
    # The probe invalid in "public" only is not listed: public is not run.
    invalid = [i["probe_id"] for i in first["invalid_probes"]]
    assert invalid == ["t1-cp2-latency", "t2-final-duration"]
    assert all(r["invalid_probes"] is None for r in rows[1:])
    assert {r["view"] for r in rows} == {"U", "T_full"} and len(rows) == 2 * (29 + 29)


def test_a_changed_probe_changes_only_its_own_call_ids(
    tmp_path: Path, data_dir: Callable[..., Path]
) -> None:
    views = [view("t1", "c1", "U"), view("t1", "c1", "T")]
    d = data_dir(views=views, probes=[probe("p1"), probe("p2")])
    config = write_sweep(tmp_path, f'data = "{d}"')
    before = {(c.item_id, c.protocol, c.step): c.call_id for c in sweep(config)[1]}
    data_dir(views=views, probes=[probe("p1", importance=1), probe("p2")])
    after = {(c.item_id, c.protocol, c.step): c.call_id for c in sweep(config)[1]}
    assert {k for k in before if before[k] != after[k]} == {
        ("p1", "U", 0), ("p1", "U", 1), ("p1", "T", 0), ("p1", "T", 1)
    }  # fmt: skip


def test_data_sources_name_every_file_read(tmp_path: Path) -> None:
    bench, _ = sweep(write_sweep(tmp_path))
    names = [Path(s.path).name for s in bench.data_sources()]
    assert names[0] == "views.jsonl" and names[-1] == "probes.jsonl"
    assert "t1-ratelimit.cp1.T_full.md" in names and len(names) == 2 + 7
    assert all(len(s.sha256) == 64 for s in bench.data_sources())


@pytest.mark.parametrize(
    ("options", "key", "reason"),
    [
        ('gap = ["U"]', "gap", "must name exactly two views"),
        ('variants = ["U"]', "variants", "at least two views"),
        ('views = ["U", "U"]', "views", "names a view twice"),
        ('views = ["U", "nope"]', "views", "no view 'nope'"),
        ('views = ["U", "T_full"]\ngap = ["U", "public"]', "gap", "view 'public' is not run"),
        ('data = "no-such-dir"', "data", "not a CTXGAP data directory"),
        ('gaps = ["U", "T_full"]', "gaps", "unknown key"),
    ],
)
def test_option_errors_name_the_file_and_key(
    tmp_path: Path, options: str, key: str, reason: str
) -> None:
    path = write_sweep(tmp_path, options)
    with pytest.raises(ConfigError) as caught:
        load_benchmarks(load_config(path))
    assert caught.value.path == str(path)
    assert caught.value.key == f"benchmarks[0].{key}" and reason in caught.value.reason
