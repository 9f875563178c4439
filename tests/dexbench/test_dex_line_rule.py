"""The forward prompt's line rule, applied as the prompt states it, gives every ground truth.

Independent of the build's tracer and of `lines.py`: the shipped programs run in a child Python
(empty environment, a temporary directory) under `sys.settrace`, which reports the lines whose
code runs, and the child reads which lines have code at all from the compiled line tables.
The rule as the prompt words it is then applied here, sentence by sentence.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evaltally.benchmarks.dexbench.instances import load_builtin
from evaltally.prompts import dexbench as prompts

TRACER = r"""
import contextlib, io, json, sys

def code_lines(code):
    out, stack = set(), [code]
    while stack:
        c = stack.pop()
        out.update(line for _, _, line in c.co_lines() if line is not None)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_lines"))
    return out

results = []
for text in json.load(sys.stdin):
    code = compile(text, "<program>", "exec")
    ran = set()
    def tracer(frame, event, arg):
        if frame.f_code.co_filename != "<program>":
            return None
        if event == "line":
            ran.add(frame.f_lineno)
        return tracer
    sys.settrace(tracer)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, {"__name__": "__main__"})
        error = None
    except BaseException as exc:
        error = repr(exc)
    finally:
        sys.settrace(None)
    results.append({"ran": sorted(ran), "code": sorted(code_lines(code)), "error": error})
json.dump(results, sys.stdout)
"""

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: "part of a statement or an expression": statements and expressions with their own parts
#: that carry a line (except clauses, imported names, keyword arguments, match patterns);
#: parameter names are not expressions.
_PARTS = (ast.stmt, ast.expr, ast.excepthandler, ast.alias, ast.keyword, ast.pattern)


def can_count(program: str) -> set[int]:
    """Lines holding part of a statement or expression, where a def or class line counts only
    through an expression written on it (its own line is not added for the statement)."""
    lines = set()
    for node in ast.walk(ast.parse(program)):
        if isinstance(node, _PARTS) and not isinstance(node, _DEFS):
            lines.add(node.lineno)
    return lines


def as_stated(program: str, ran: set[int], with_code: set[int]) -> set[int]:
    """Such a line counts when code written on it runs, or when Python generates none for it."""
    return {line for line in can_count(program) if line in ran or line not in with_code}


def traced(programs: list[str], tmp_path: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-I", "-c", TRACER],
        input=json.dumps(programs),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={},
        timeout=300,
        check=True,
    )
    out: list[dict[str, Any]] = json.loads(proc.stdout)
    return out


def check_the_prompt_states_the_rule_this_test_applies() -> None:
    system = prompts.forward_messages("x = 1\n")[0]["content"]
    assert prompts.LINE_RULE in system
    for sentence in (
        "Only a line that holds part of a statement or an expression can count.",
        "counts as executed when Python runs code written on it at least once",
        "A def or class line counts only when an expression is written on it",
        "a line that holds part of a statement or expression but for which Python generates no "
        "code counts as executed even when execution never reaches it",
        "An except line counts when an exception reaches it and its type is tested",
    ):
        assert sentence in system


def test_all_398_ground_truths_follow_the_rule_as_the_prompt_states_it(tmp_path: Path) -> None:
    check_the_prompt_states_the_rule_this_test_applies()
    instances = load_builtin()
    assert len(instances) == 398
    runs = traced([i.program for i in instances], tmp_path)
    wrong = []
    for instance, run in zip(instances, runs, strict=True):
        assert run["error"] is None, (instance.source_id, run["error"])
        counted = as_stated(instance.program, set(run["ran"]), set(run["code"]))
        if counted != set(instance.covered_lines):
            wrong.append(instance.source_id)
    assert wrong == []


@pytest.mark.parametrize(
    ("source_id", "never_run"),
    [("HumanEval/150", {14}), ("HumanEval/156", {10, 12})],
)
def test_lines_without_code_count_though_they_never_run(
    tmp_path: Path, source_id: str, never_run: set[int]
) -> None:
    """The two programs where the earlier rule ("counts when it runs") contradicted the ground
    truth: a `break` after a `return`, and continuation lines of constant lists."""
    instance = next(i for i in load_builtin() if i.source_id == source_id)
    (run,) = traced([instance.program], tmp_path)
    assert never_run <= set(instance.covered_lines)
    assert never_run.isdisjoint(run["ran"]) and never_run.isdisjoint(run["code"])


def test_an_except_line_counts_when_its_type_is_tested(tmp_path: Path) -> None:
    program = (
        "def f():\n"
        "    try:\n"
        "        raise KeyError\n"
        "    except ValueError:\n"
        "        pass\n"
        "    except KeyError:\n"
        "        pass\n"
        "f()\n"
    )
    (run,) = traced([program], tmp_path)
    assert as_stated(program, set(run["ran"]), set(run["code"])) == {2, 3, 4, 6, 7, 8}


def test_the_worked_example_follows_the_rule(tmp_path: Path) -> None:
    (run,) = traced([prompts.EXAMPLE_PROGRAM], tmp_path)
    counted = as_stated(prompts.EXAMPLE_PROGRAM, set(run["ran"]), set(run["code"]))
    assert counted == set(prompts.EXAMPLE_EXECUTED)


def test_v1_forward_prompts_still_render_for_old_runs() -> None:
    old = prompts.forward_messages("x = 1\n", "dexbench-v1")[0]["content"]
    assert "except lines whose handler is entered" in old and prompts.LINE_RULE not in old
