"""Program text: CRUXEval scripts, HumanEval/PythonSaga solutions and test assertions."""

from __future__ import annotations

import ast

from evaltally.benchmarks.dexbench import programs


def test_cruxeval_program_imports_used_stdlib_modules_and_asserts_verbatim() -> None:
    code = "def f(text):\n    if string.ascii_letters and re.match('a', text):\n        return 1"
    assert programs.cruxeval_program(code, "'abc'", "1") == (
        "import re\nimport string\nimport unittest\n\n"
        "def f(text):\n    if string.ascii_letters and re.match('a', text):\n        return 1\n"
        "\n\nunittest.TestCase().assertEqual(f('abc'), 1)\n"
    )


def test_cruxeval_control_flow_is_a_whole_word() -> None:
    assert programs.has_crux_control_flow("def f(x):\n    return x if x else 0")
    assert not programs.has_crux_control_flow("def f(iffy, forty):\n    return iffy + forty")


def test_control_flow_count_covers_each_decision_kind() -> None:
    def count(src: str) -> int:
        return programs.control_flow_count(ast.parse(src))

    assert count("def f(x):\n    return x + 1") == 0
    assert count("def f(x):\n    return [y for y in x]") == 0
    assert count("if a:\n    pass\nelif b:\n    pass\nelse:\n    pass") == 3
    assert count("if a:\n    pass\nelse:\n    if b:\n        pass") == 3
    assert (
        count("try:\n    pass\nexcept A:\n    pass\nexcept B:\n    pass\nfinally:\n    pass") == 3
    )
    assert count("x = a and b or c") == 2
    assert count("x = 1 if a else 2") == 1
    assert count("with a:\n    pass") == 1


def test_strip_solution_drops_triple_quoted_strings_and_collapses_blank_runs() -> None:
    solution = (
        'from typing import List\n\n\ndef f(x: int) -> int:\n    """ Doc.\n    >>> f(1)\n'
        "    \"\"\"\n    if x:\n\n\n        return 1\n    return r'''raw'''\n"
    )
    assert programs.strip_solution(solution) == (
        "from typing import List\n\ndef f(x: int) -> int:\n\n    if x:\n\n        return 1\n"
        "    return "
    )


TEST = """

METADATA = {}


def check(candidate):
    assert candidate([
        1, 2,
    ], 3) == [1]
    assert candidate("a") != 2, "message"
    assert candidate(1) is True
    assert candidate(2) is False
    assert candidate(key=3)
    assert abs(candidate(0.5) - 1) < 1e-6
    assert True, "This prints if this assert fails"

"""


def test_assertions_from_the_first_candidate_call_become_unittest_calls() -> None:
    calls = list(programs.test_calls(TEST, "entry"))
    assert [(c.index, c.assertion, c.input) for c in calls] == [
        (0, "unittest.TestCase().assertEqual(entry([1, 2], 3), [1])", "[1, 2], 3"),
        (1, "unittest.TestCase().assertNotEqual(entry('a'), 2)", "'a'"),
        (2, "unittest.TestCase().assertTrue(entry(1))", "1"),
        (3, "unittest.TestCase().assertFalse(entry(2))", "2"),
        (4, "unittest.TestCase().assertTrue(entry(key=3))", "key=3"),
        (5, "unittest.TestCase().assertTrue(abs(entry(0.5) - 1) < 1e-06)", "0.5"),
        (6, "unittest.TestCase().assertTrue(True)", ""),
    ]


def test_a_test_without_assert_candidate_yields_nothing() -> None:
    assert list(programs.test_calls("def check(candidate):\n    assert True", "f")) == []


def test_script_program_layout() -> None:
    program = programs.script_program('def f(x):\n    """d"""\n    return x\n', "ASSERT")
    assert program == (
        "import unittest\nimport sys\nimport io\nimport datetime\nimport math\n\n"
        "def f(x):\n\n    return x\n\n\nASSERT\n"
    )
