"""CTXGAP prompts and parsers: what each side sees, and a verdict is read strictly or not at all."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evaltally.benchmarks.ctxgap.chain import judge_messages, observer_messages
from evaltally.benchmarks.ctxgap.data import load_dataset
from evaltally.benchmarks.ctxgap.parse import parse_observer, parse_verdict
from evaltally.prompts import ctxgap as prompts


def test_prompt_module_imports_nothing_from_benchmarks() -> None:
    code = (
        "import sys, evaltally.prompts.ctxgap\n"
        "print(sorted(m for m in sys.modules if m.startswith('evaltally.benchmarks')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_observer_messages_hold_the_question_and_the_view_only() -> None:
    ds = load_dataset("example")
    probe = ds.probes[0]
    view = ds.views[(probe.task_id, probe.checkpoint)]["public"]
    messages = observer_messages(probe, view)
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert probe.question in user and view.text in user
    assert "public" not in user.replace(view.text, "")
    assert messages == prompts.render_observer(question=probe.question, view_text=view.text)


def test_judge_messages_hold_question_reference_answer_and_the_versioned_rubric() -> None:
    ds = load_dataset("example")
    probe = ds.probes[1]
    messages = judge_messages(probe, "It is kept in Redis.")
    user = messages[1]["content"]
    for part in (probe.question, probe.reference, "It is kept in Redis.", prompts.RUBRIC):
        assert part in user
    assert prompts.JUDGE_PROMPT_VERSION in user
    assert user.rstrip().endswith("VERDICT: <score>")
    for view in ds.views[(probe.task_id, probe.checkpoint)].values():
        assert view.text not in user
    assert "T_full" not in user and "public" not in user


def test_rendering_is_deterministic() -> None:
    a = prompts.render_judge(question="q", reference="r", answer="a")
    assert a == prompts.render_judge(question="q", reference="r", answer="a")


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("VERDICT: 1", 1.0),
        ("The answer matches.\nVERDICT: 0.5", 0.5),
        ("Wrong file.\n\nVERDICT:0  \n\n", 0.0),
        ("  VERDICT:\t1\n", 1.0),
    ],
)
def test_verdicts_that_parse(text: str, verdict: float) -> None:
    result = parse_verdict(text)
    assert result.ok and result.value == verdict and result.path == "verdict"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "empty verdict"),
        ("The answer is correct.", "the last line is not"),
        ("VERDICT: 1\nbecause it matches", "the last line is not"),
        ("VERDICT: 0.75", "the last line is not"),
        ("VERDICT: 1.0", "the last line is not"),
        ("verdict: 1", "the last line is not"),
        ("**VERDICT: 1**", "the last line is not"),
        ("VERDICT: 1/2", "the last line is not"),
        ("VERDICT: correct", "the last line is not"),
        ("VERDICT: 1 (mostly)", "the last line is not"),
        ("Verdict: 0\nOn reflection:\nVERDICT: 1", "more than one verdict line"),
        ("**Verdict**: partial\nVERDICT: 0.5", "more than one verdict line"),
    ],
)
def test_verdicts_that_do_not_parse_are_failures_not_guesses(text: str, error: str) -> None:
    result = parse_verdict(text)
    assert not result.ok and result.value is None
    assert result.error is not None and error in result.error


def test_observer_answers_are_text_and_blank_is_a_failure() -> None:
    assert parse_observer("  Redis.\n").value == "Redis."
    assert parse_observer(prompts.NOT_IN_DOCUMENT).ok
    blank = parse_observer(" \n\t")
    assert not blank.ok and blank.error == "empty answer"
