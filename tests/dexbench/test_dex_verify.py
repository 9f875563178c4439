"""Backward verification in the sandbox: known-good and unchanged inputs on the shipped
instances, every hostile answer form refused unrun, hostile programs stopped or contained."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from evaltally.benchmarks.dexbench.build import make_instance
from evaltally.benchmarks.dexbench.coverage import Trace, new_pool, trace
from evaltally.benchmarks.dexbench.instances import Instance, load_builtin
from evaltally.benchmarks.dexbench.programs import Assertion
from evaltally.benchmarks.dexbench.verify import Verdict, verify_backward
from evaltally.sandbox import TaskLimits

FAST = TaskLimits(cpu_seconds=1, wall_seconds=20.0, kill_grace_seconds=2.0)


def _exists(path: str) -> bool:
    return Path(path).exists()


def _by_id(instance_id: str) -> Instance:
    return next(i for i in load_builtin() if i.id == instance_id)


async def _instance(body: str, call: str) -> Instance:
    """An instance of ``f`` whose last line is ``assertEqual(f(<call>), 0)``."""
    program = "import unittest\n\n" + textwrap.dedent(body).strip("\n") + "\n\n\n"
    program += f"unittest.TestCase().assertEqual(f({call}), 0)\n"
    async with new_pool(1) as pool:
        run = await trace(pool, program)
    assert isinstance(run, Trace) and run.error is None, run
    return make_instance("cruxeval", "t", "f", program, Assertion(0, "", call), run)


async def _verify(instance: Instance, answer: str | bytes) -> Verdict:
    async with new_pool(1) as pool:
        return await verify_backward(instance, answer, pool=pool, limits=FAST)


async def test_known_good_inputs_pass_and_unchanged_inputs_fail_on_shipped_instances() -> None:
    human = [i for i in load_builtin() if i.known_good_input is not None][:12]
    async with new_pool() as pool:
        good = await asyncio.gather(
            *(verify_backward(i, i.known_good_input or "", pool=pool) for i in human)
        )
        same = await asyncio.gather(*(verify_backward(i, i.input, pool=pool) for i in human))
    assert all(v.passed and v.reason == "reached" for v in good), good
    assert not any(v.passed for v in same)
    assert {v.reason for v in same} <= {"not_reached", "not_a_literal"}


async def test_a_passing_verdict_says_which_line_ran() -> None:
    instance = _by_id("cruxeval/sample_2")  # f(text): the body of `if i in new_text` (line 7)
    verdict = await _verify(instance, "'a+b'")
    assert verdict.as_dict() == {
        "verdict": "passed",
        "passed": True,
        "reason": "reached",
        "detail": "target line 6 reached (line 7 ran)",
    }
    wrong_arity = await _verify(instance, "'a', 'b'")
    assert wrong_arity.reason == "not_reached"
    assert "TypeError: f() takes 1 positional argument but 2 were given" in wrong_arity.detail


@pytest.mark.parametrize(
    "answer",
    [
        "__import__('os').system('touch /tmp/dexbench-pwned')",
        "lambda: __import__('os')",
        "os",
        "os.environ",
        "f'{__import__(\"os\").getpid()}'",
        "10**10**10",
        "[0] * 10_000_000",
        "[" + "0," * 10_000_000 + "]",
        "[" * 1000 + "]" * 1000,
        b"'\xff'",
        "'\ud800'",
    ],
)
async def test_hostile_answers_are_failed_verifications_and_never_run(answer: str | bytes) -> None:
    verdict = await _verify(_by_id("cruxeval/sample_2"), answer)
    assert (verdict.verdict, verdict.reason) == ("failed", "not_a_literal")
    assert not _exists("/tmp/dexbench-pwned")


async def test_an_input_that_loops_forever_after_the_target_still_passes() -> None:
    body = """
    def f(n):
        if n > 0:
            while True:
                pass
        return 0
    """
    verdict = await _verify(await _instance(body, "0"), "1")
    assert verdict.passed
    assert (
        verdict.detail
        == "target line 4 reached (lines 5, 6 ran); then stopped at the CPU time limit"
    )


async def test_an_input_that_loops_forever_before_the_target_fails_at_the_limit() -> None:
    body = """
    def f(n):
        i = 0
        while i < 3 or n > 5:
            i += 1
        if n < 0:
            return 1
        return 0
    """
    instance = await _instance(body, "0")
    assert (instance.target_line, instance.target_lines) == (7, (8,))
    verdict = await _verify(instance, "6")
    assert (verdict.verdict, verdict.reason) == ("failed", "limit")
    assert verdict.detail == "target not reached; stopped at the CPU time limit"


async def test_unbounded_allocation_is_stopped() -> None:
    body = """
    def f(n):
        if n > 0:
            grow = []
            while True:
                grow.append(bytearray(10**7))
        return 0
    """
    instance = await _instance(body, "0")
    async with new_pool(1) as pool:
        limits = TaskLimits(memory_bytes=256 * 1024 * 1024, cpu_seconds=5, wall_seconds=20.0)
        verdict = await verify_backward(instance, "1", pool=pool, limits=limits)
    assert verdict.passed and "MemoryError" in verdict.detail


@pytest.mark.parametrize(
    ("statement", "refused"),
    [
        ("__import__('os').fork()", "os.fork"),
        ("__import__('socket').socket()", "socket.__new__"),
        ("open('/tmp/dexbench-escape.txt', 'w')", "writing '/tmp/dexbench-escape.txt' outside"),
    ],
)
async def test_forks_sockets_and_writes_outside_are_refused_inside_the_program(
    statement: str, refused: str
) -> None:
    body = f"""
    def f(n):
        if n > 0:
            {statement}
            return 1
        return 0
    """
    verdict = await _verify(await _instance(body, "0"), "1")
    # the target (the if's body) is reached: the refused call is its first line
    assert verdict.passed
    assert f"PermissionError: sandbox: {refused}" in verdict.detail
    assert not _exists("/tmp/dexbench-escape.txt")
