"""Backward verification through the hook's worker processes: known-good and unchanged inputs
on the shipped instances, every hostile answer form refused unrun, hostile programs stopped or
contained, and the same verdict from any calling process (the sandbox's server fixes the seed)."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest

from evaltally.benchmarks.dexbench.build import make_instance
from evaltally.benchmarks.dexbench.coverage import Trace, new_pool, trace
from evaltally.benchmarks.dexbench.instances import Instance, load_builtin
from evaltally.benchmarks.dexbench.programs import Assertion
from evaltally.benchmarks.dexbench.verify import check, job
from evaltally.runner.workers import Verdict, WorkerPool
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


async def _verify_all(
    pairs: list[tuple[Instance, str]], limits: TaskLimits = FAST, workers: int = 2
) -> list[Verdict]:
    pool = WorkerPool(workers)
    try:
        return list(await asyncio.gather(*(pool.run(job(i, a, limits)) for i, a in pairs)))
    finally:
        await pool.close()


async def _verify(instance: Instance, answer: str, limits: TaskLimits = FAST) -> Verdict:
    [verdict] = await _verify_all([(instance, answer)], limits, 1)
    return verdict


def _code(verdict: Verdict) -> tuple[str, str]:
    assert isinstance(verdict.detail, dict), verdict
    return verdict.status, verdict.detail["code"]


def _message(verdict: Verdict) -> str:
    assert isinstance(verdict.detail, dict), verdict
    return str(verdict.detail["message"])


async def test_known_good_inputs_pass_and_unchanged_inputs_fail_on_shipped_instances() -> None:
    human = [i for i in load_builtin() if i.known_good_input is not None][:12]
    good = await _verify_all([(i, i.known_good_input or "") for i in human], TaskLimits())
    same = await _verify_all([(i, i.input) for i in human], TaskLimits())
    assert all(_code(v) == ("passed", "reached") for v in good), good
    assert {_code(v) for v in same} <= {("failed", "not_reached"), ("failed", "not_a_literal")}


async def test_a_passing_verdict_says_which_line_ran() -> None:
    instance = _by_id("cruxeval/sample_2")  # f(text): the body of `if i in new_text` (line 7)
    verdict, wrong_arity = await _verify_all([(instance, "'a+b'"), (instance, "'a', 'b'")])
    assert verdict == Verdict(
        "passed",
        {"code": "reached", "message": "target line 6 reached (line 7 ran)", "sandbox": "os"},
    )
    assert _code(wrong_arity) == ("failed", "not_reached")
    assert "TypeError: f() takes 1 positional argument but 2 were given" in _message(wrong_arity)


HOSTILE = [
    "__import__('os').system('touch /tmp/dexbench-pwned')",
    "lambda: __import__('os')",
    "os",
    "os.environ",
    "f'{__import__(\"os\").getpid()}'",
    "10**10**10",
    "[0] * 10_000_000",
    "[" + "0," * 10_000_000 + "]",
    "'" + "x" * 100_000_000 + "'",
    "[" * 1000 + "]" * 1000,
]


async def test_hostile_answers_are_failed_verifications_and_never_run() -> None:
    instance = _by_id("cruxeval/sample_2")
    verdicts = await _verify_all([(instance, answer) for answer in HOSTILE])
    assert [_code(v) for v in verdicts] == [("failed", "not_a_literal")] * len(HOSTILE)
    assert "a function call is not a literal" in _message(verdicts[0])
    assert "longer than 50000 characters" in _message(verdicts[8])
    assert not _exists("/tmp/dexbench-pwned")


async def test_text_that_is_not_utf8_is_refused_by_the_check_itself() -> None:
    # The ledger and the hook's JSON pipe cannot carry such text; the check refuses it anyway.
    args: dict[str, Any] = dict(job(_by_id("cruxeval/sample_2"), "").args)  # type: ignore[arg-type]
    for answer in (b"'\xff'", "'\ud800'"):
        result = check({**args, "answer": answer})
        assert result["verdict"] == "failed" and result["detail"]["code"] == "not_a_literal"
        assert "not valid UTF-8" in result["detail"]["message"]


async def test_an_input_that_loops_forever_after_the_target_still_passes() -> None:
    body = """
    def f(n):
        if n > 0:
            while True:
                pass
        return 0
    """
    verdict = await _verify(await _instance(body, "0"), "1")
    assert verdict.status == "passed"
    assert (
        _message(verdict)
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
    assert _code(verdict) == ("failed", "limit")
    assert _message(verdict) == "target not reached; stopped at the CPU time limit"


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
    limits = TaskLimits(memory_bytes=256 * 1024 * 1024, cpu_seconds=5, wall_seconds=20.0)
    verdict = await _verify(instance, "1", limits)
    assert verdict.status == "passed" and "MemoryError" in _message(verdict)


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
    assert verdict.status == "passed"
    assert f"PermissionError: sandbox: {refused}" in _message(verdict)
    assert not _exists("/tmp/dexbench-escape.txt")


async def test_the_program_holds_no_descriptor_of_the_worker() -> None:
    body = """
    def f(n):
        if n > 0:
            raise ValueError(sorted(int(d) for d in __import__('os').listdir('/proc/self/fd')))
        return 0
    """
    verdict = await _verify(await _instance(body, "0"), "1")
    # stdin, stdout/stderr (a temporary file), the result pipe, and listdir's own descriptor:
    # the worker's reply channel to the sweep is not among them.
    assert _message(verdict).endswith("; then ValueError: [0, 1, 2, 3, 4]")


async def test_a_process_with_a_random_hash_seed_gets_the_same_verdict() -> None:
    # pytest's own process has a random seed; the program runs under the sandbox server's fixed
    # one, so set order, and the program's path, are those of the hook's workers.
    instance = _by_id("cruxeval/sample_2")
    args = job(instance, "'a+b'").args
    [through_workers] = await _verify_all([(instance, "'a+b'")], workers=1)
    assert check(args) == {"verdict": "passed", "detail": through_workers.detail}  # type: ignore[arg-type]
