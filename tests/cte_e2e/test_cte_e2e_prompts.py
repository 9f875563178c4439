"""Prompts: protocol histories, determinism, and that no prompt ever leaks an oracle field."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cte_e2e_kit import CORE_V1, REPO

from evaltally.benchmarks.base import StepAnswer
from evaltally.benchmarks.binding import load_benchmarks
from evaltally.benchmarks.cte.benchmark import PROTOCOLS, WINDOWED, CteBenchmark
from evaltally.config import BenchmarkConfig, load_config
from evaltally.errors import ConfigError
from evaltally.plan import iter_plan
from evaltally.prompts.cte import INTERVENTION_MARK, PROMPT_VERSION, SYSTEM_V2, call_line
from evaltally.records import PlannedCall, Status


def bench(tmp_path: Path, **options: Any) -> CteBenchmark:
    cfg = BenchmarkConfig("cte", "cte", 1, options, tmp_path, tmp_path / "x.toml", 0)
    return CteBenchmark(cfg)


def call(item: str, protocol: str, i: int) -> PlannedCall:
    spec = {"future_index": i, "prompt_version": PROMPT_VERSION}
    return PlannedCall("c", "ch", i if protocol == "free_rollout" else 0, "m", "cte", item, 0,
                       protocol, spec)  # fmt: skip


def fake_answers(n: int) -> list[StepAnswer]:
    """Predictions that cannot collide with real responses; step 2 failed to parse."""
    out = []
    for j in range(n):
        if j == 2:
            out.append(StepAnswer(j, Status.PARSE_ERROR, "garbage", None))
        else:
            out.append(StepAnswer(j, Status.OK, "{}", {"zz_pred": j, "a": 1}))
    return out


def history_and_mark(user: str) -> tuple[list[str], int | None]:
    """The numbered history lines, and how many precede the intervention mark (None: no mark)."""
    section = user.split("## Call history (oldest first)\n", 1)[1].split("\n\n## New call", 1)[0]
    if section == "(none)":
        return [], None
    lines = section.split("\n")
    mark = lines.index(INTERVENTION_MARK) if INTERVENTION_MARK in lines else None
    if mark is not None:
        del lines[mark]
    assert INTERVENTION_MARK not in lines
    for n, line in enumerate(lines, 1):
        assert line.startswith(f"{n}. ")
    return [line.split(". ", 1)[1] for line in lines], mark


def history(user: str) -> list[str]:
    return history_and_mark(user)[0]


def expected(sc: Any, protocol: str, i: int) -> list[str]:
    observed = [call_line(c.op, c.args, c.response) for c in sc.prefix]
    if protocol == "no_feedback":
        return observed
    if protocol in ("answers_revealed", "full_history"):
        future = [call_line(c.op, c.args, c.response) for c in sc.scored[:i]]
        if protocol == "full_history":
            return observed + future
    else:
        future = [
            call_line(
                c.op,
                c.args,
                {"error": {"code": "MODEL_INVALID_JSON"}} if j == 2 else {"zz_pred": j, "a": 1},
                sort_keys=True,
            )
            for j, c in enumerate(sc.scored[:i])
        ]
    return (observed + future)[-20:]


def check_no_leak(b: CteBenchmark, stride: int) -> int:
    checked = 0
    answers = fake_answers(40)
    for k, (sid, sc) in enumerate(b.scenarios.items()):
        if k % stride:
            continue
        for protocol in ("answers_revealed", "no_feedback", "free_rollout"):
            for i in range(len(sc.scored)):
                msgs = b.render(call(sid, protocol, i), answers[:i])
                assert msgs == b.render(call(sid, protocol, i), answers[:i])  # deterministic
                user = msgs[1]["content"]
                shown = history(user)
                assert shown == expected(sc, protocol, i)
                # the source itself may spell a response out (`return {"error": ...}`): skip it
                body = user.split("## Intervention", 1)[1]
                rest = body.split("## Call history")[0]
                new = body.split("## New call\n", 1)[1].split("\n", 1)[0]
                req = sc.scored[i]
                assert new == f"{req.op}({json.dumps(req.args, ensure_ascii=False)})"
                visible = {line.split(" -> ", 1)[1] for line in shown}
                target = json.dumps(sc.scored[i].response, ensure_ascii=False)
                # the target never appears outside the history, nor in it unless shown there
                assert target not in rest
                if target in body.replace(new, "") and protocol != "answers_revealed":
                    assert target in visible or any(target in v for v in visible)
                # no-intervention-only responses never appear at all
                for j, orig in enumerate(sc.original[: len(sc.scored)]):
                    text = json.dumps(orig.response, ensure_ascii=False)
                    legit = any(text in line for line in shown) or text in json.dumps(
                        [c.response for c in sc.counterfactual], ensure_ascii=False
                    )
                    if not legit:
                        assert text not in body.replace(new, ""), (sid, protocol, i, j)
                assert sid not in user and "is_effect_step" not in user
                assert "no_intervention" not in user and "trace_original" not in user
                checked += 1
    return checked


def test_no_prompt_leaks_builtin(tmp_path: Path) -> None:
    assert check_no_leak(bench(tmp_path), stride=9) > 3000


def test_no_prompt_leaks_core_v1(tmp_path: Path) -> None:
    assert check_no_leak(bench(tmp_path, data=str(CORE_V1)), stride=13) > 2000


def test_prompt_shapes(tmp_path: Path) -> None:
    b = bench(tmp_path, kinds=["clock_jump"], limit=1)
    sc = next(iter(b.scenarios.values()))
    user = b.render(call(sc.item_id, "no_feedback", 0), [])[1]["content"]
    assert user.index("## Service source") < user.index("## Intervention")
    assert "state path: clock" in user and "code is unchanged" in user
    assert user.rstrip().endswith("complete JSON response of the service to this new call.")
    b = bench(tmp_path, kinds=["branch_inversion"], limit=1)
    sc = next(iter(b.scenarios.values()))
    user = b.render(call(sc.item_id, "answers_revealed", 0), [])[1]["content"]
    assert sc.patched_source is not None and sc.patched_source.rstrip() in user
    assert f"changed line {sc.intervention.line_number}" in user
    assert f"old token: {sc.intervention.original_span}" in user


def test_chains_and_spec(tmp_path: Path) -> None:
    b = bench(tmp_path, limit=3, protocols=["free_rollout", "no_feedback"])
    templates = list(b.chains())
    by = Counter(t.protocol for t in templates)
    assert by == {"free_rollout": 3, "no_feedback": 120}
    fr = next(t for t in templates if t.protocol == "free_rollout")
    assert [s["future_index"] for s in fr.steps] == list(range(40))
    assert all(s["prompt_version"] == PROMPT_VERSION for s in fr.steps)
    assert len({t.item_hash for t in templates if t.protocol == "no_feedback"}) == 120


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"bogus": 1}, "bogus"),
        ({"protocols": ["nope"]}, "protocols"),
        ({"protocols": []}, "protocols"),
        ({"limit": 0}, "limit"),
        ({"limit": True}, "limit"),
        ({"data": "missing.jsonl"}, "data"),
        ({"services": "bank"}, "services"),
        ({"services": ["nosuch"]}, "services"),
        ({"parse": "lenient"}, "parse"),
    ],
)
def test_option_errors_name_the_key(tmp_path: Path, options: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as exc:
        bench(tmp_path, **options)
    assert f"benchmarks[0].{key}" in str(exc.value)


def test_paper_config_plans_10200_per_model_and_protocol(tmp_path: Path) -> None:
    for name in ("cte-paper", "cte-rehearsal", "cte-core-v1-baselines"):
        path = REPO / "configs" / f"{name}.toml"
        text = path.read_text().replace("../data/cte-bench/core_v1.jsonl", str(CORE_V1))
        cfg = load_config(path, text=text)
        counts = Counter((c.model, c.protocol) for c in iter_plan(cfg, load_benchmarks(cfg)))
        assert len(counts) == len(cfg.models) * 3
        assert set(counts.values()) == {10_200}
    paper_config = load_config(REPO / "configs" / "cte-paper.toml")
    # the release's parser, so parse-failure rates compare with the paper's
    assert paper_config.benchmarks[0].options["parse"] == "release"
    paper = {m.key: m for m in paper_config.models}
    claude = paper.pop("claude-sonnet-4.6")
    assert {m.reasoning.mode for m in paper.values()} == {"off"}
    # The paper: Sonnet runs on Bedrock defaults without requesting thinking, so neither a
    # reasoning switch nor a temperature is sent for it.
    assert claude.reasoning.mode == "default" and "temperature" not in claude.params


def test_parse_mode_release_selects_the_release_repair(tmp_path: Path) -> None:
    quoted_brace = '{"msg": "a } b", "n": 1}'
    tolerant = bench(tmp_path, limit=1)
    c = call(next(iter(tolerant.scenarios)), "answers_revealed", 0)
    assert tolerant.parse(c, quoted_brace).path == "strict"
    release = bench(tmp_path, limit=1, parse="release")
    assert release.parse(c, '{"n": 1}').path == "release"
    assert not release.parse(c, quoted_brace).ok


def stated_position(user: str) -> str:
    """The sentence of the intervention block that says when the intervention happened."""
    block = user.split("## Intervention\n", 1)[1]
    return block.split(", one token of the source", 1)[0].split(", the service's hidden", 1)[0]


def check_timing(b: CteBenchmark) -> int:
    """Every prompt's stated intervention position agrees with the history lines it shows,
    computed here independently from the scenario: observed calls are the first P lines of the
    trace, scored call j is line P + j + 1, and windowed protocols show the last 20."""
    checked = 0
    answers = fake_answers(40)
    protocols = ("answers_revealed", "no_feedback", "free_rollout", "full_history")
    for sid, sc in b.scenarios.items():
        observed = [call_line(c.op, c.args, c.response) for c in sc.prefix]
        n_obs = len(observed)
        for protocol in protocols:
            for i in range(len(sc.scored)):
                msgs = b.render(call(sid, protocol, i), answers[:i])
                user = msgs[1]["content"]
                shown, mark = history_and_mark(user)
                after = 0 if protocol == "no_feedback" else i
                start = max(0, n_obs + after - 20) if protocol in WINDOWED else 0
                before = max(0, n_obs - start)  # observed calls among the lines shown
                hidden = max(0, start - n_obs)  # post-intervention calls above the window
                assert len(shown) == before + (after - hidden)
                assert shown[:before] == observed[start:]
                for line, c in zip(shown[before:], sc.scored[hidden:after], strict=True):
                    assert line.startswith(f"{c.op}(")
                said = stated_position(user)
                check_shown_and_unshown(sc, protocol, i, msgs, before, len(shown))
                if hidden:
                    assert mark is None and f"the {hidden} calls between it" in said
                    assert said.startswith("Before every call in the history below")
                elif before == len(shown):
                    assert mark == before and said.startswith("Right after the last call")
                    unlisted = f"the {i} calls made after it and before the new call"
                    assert (unlisted in said) == (protocol == "no_feedback" and i > 0)
                elif before == 0:
                    assert mark == 0 and said.startswith("Right before the first call")
                else:
                    assert mark == before
                    assert said.startswith(f"Right after call {before} of the history below")
                    assert f"calls {before + 1}-{len(shown)} after it" in said
                checked += 1
    return checked


def check_shown_and_unshown(
    sc: Any, protocol: str, i: int, msgs: list[Any], before: int, n_shown: int
) -> None:
    """The system message says what this protocol's history holds and leaves out, and a state
    intervention's "at step N" is restated in the history's own numbering."""
    system, user = msgs[0]["content"], msgs[1]["content"]
    assert "the calls it has handled so far" not in system
    if protocol == "no_feedback":
        assert "Calls made after the change and before the new call are not shown" in system
        assert f"the {i} calls made after it" in user or i == 0
    elif protocol == "full_history":
        assert "every call the service handled before the new one" in system
    else:
        assert "only the most recent calls before the new one (at most 20)" in system
        assert n_shown <= 20
        own = "calls made after it carry your own earlier predictions" in system
        assert own == (protocol == "free_rollout")
    description = user.split("- description: ", 1)[1].split("\n", 1)[0]
    assert "at step" not in description
    if not sc.intervention.is_source_edit and before:
        # Core-v1 and our generator put state interventions right after the last observed call
        assert f"right after call {before} of the history below" in description


def test_no_feedback_prompt_says_later_calls_are_not_shown(tmp_path: Path) -> None:
    """Scenario a6e8b6c3ecdc's scored call 10 asks about token t5, which only an unshown call
    after the intervention created: the prompt must say such calls exist and are not shown."""
    b = bench(tmp_path, data=str(CORE_V1))
    msgs = b.render(call("a6e8b6c3ecdc", "no_feedback", 10), [])
    assert '"t5"' in msgs[1]["content"].split("## New call\n", 1)[1]
    assert "t5" not in history(msgs[1]["content"])[-1]
    assert "Calls made after the change and before the new call are not shown" in msgs[0]["content"]
    assert "the 10 calls made after it and before the new call are not shown" in msgs[1]["content"]


def test_state_intervention_uses_the_history_numbering(tmp_path: Path) -> None:
    """Core-v1 writes "at step 55" (0-based over the trace) for a state overwrite after 56
    observed calls; the prompt says "call 56" as its history numbers it, or, once the window
    has dropped that call, that it is older than every call shown."""
    b = bench(tmp_path, data=str(CORE_V1), kinds=["clock_jump"])
    sid, sc = next((k, v) for k, v in b.scenarios.items() if len(v.prefix) == 56)
    assert sc.intervention.description.endswith("at step 55")
    first = b.render(call(sid, "no_feedback", 0), [])[1]["content"]
    assert "right after call 56 of the history below" in first and "at step" not in first
    windowed = b.render(call(sid, "answers_revealed", 3), [])[1]["content"]
    assert "right after call 17 of the history below" in windowed
    late = b.render(call(sid, "answers_revealed", 25), [])[1]["content"]
    assert "before the first call of the history below" in late


def test_stated_intervention_position_agrees_with_history_builtin(tmp_path: Path) -> None:
    assert check_timing(bench(tmp_path, protocols=list(PROTOCOLS))) == 255 * 40 * 4


def test_stated_intervention_position_agrees_with_history_core_v1(tmp_path: Path) -> None:
    b = bench(tmp_path, data=str(CORE_V1), protocols=list(PROTOCOLS))
    assert check_timing(b) == 255 * 40 * 4


def test_window_option_changes_the_history_and_the_ids(tmp_path: Path) -> None:
    sc_id = next(iter(bench(tmp_path, limit=1).scenarios))
    default = next(iter(bench(tmp_path, limit=1, protocols=["free_rollout"]).chains()))
    wide = bench(tmp_path, limit=1, protocols=["free_rollout"], window=30)
    assert next(iter(wide.chains())).steps[5]["window"] == 30
    assert "window" not in default.steps[5]
    spec = {"future_index": 39, "prompt_version": PROMPT_VERSION, "window": 30}
    c = PlannedCall("c", "ch", 39, "m", "cte", sc_id, 0, "free_rollout", spec)
    assert len(history(wide.render(c, fake_answers(39))[1]["content"])) == 30


def test_v1_prompts_still_render_for_old_runs(tmp_path: Path) -> None:
    b = bench(tmp_path, limit=1, prompt_version="cte-v1")
    sid = next(iter(b.scenarios))
    spec = {"future_index": 30, "prompt_version": "cte-v1"}
    c = PlannedCall("c", "ch", 0, "m", "cte", sid, 0, "answers_revealed", spec)
    user = b.render(c, [])[1]["content"]
    assert INTERVENTION_MARK not in user
    assert stated_position(user) == "Right after the last call in the history below"


def test_v2_prompts_still_render_for_old_runs(tmp_path: Path) -> None:
    b = bench(tmp_path, data=str(CORE_V1), kinds=["clock_jump"], limit=1, prompt_version="cte-v2")
    sid = next(iter(b.scenarios))
    spec = {"future_index": 10, "prompt_version": "cte-v2"}
    c = PlannedCall("c", "ch", 0, "m", "cte", sid, 0, "no_feedback", spec)
    system, user = (m["content"] for m in b.render(c, []))
    assert system == SYSTEM_V2 and "at step" in user and "calls made after it" not in user


def test_reasoning_probe_config_plans_24_scenarios_per_model_and_protocol() -> None:
    path = REPO / "configs" / "cte-reasoning-probe.toml"
    text = path.read_text().replace("../data/cte-bench/core_v1.jsonl", str(CORE_V1))
    cfg = load_config(path, text=text)
    assert {m.reasoning.mode for m in cfg.models} == {"on", "off"}
    counts = Counter((c.model, c.protocol) for c in iter_plan(cfg, load_benchmarks(cfg)))
    assert set(counts.values()) == {24 * 40} and len(counts) == 6
