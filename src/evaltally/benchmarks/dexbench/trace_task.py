"""Sandbox task: run one DexBench program under a line tracer and report what ran.

Runs inside the sandbox child only (``evaltally.sandbox.child`` loads it by path into a bare
interpreter), so it imports nothing but the standard library. Payload:
``{"program": text, "call": null | {"entry": name, "args": literal-tuple text}}``.

- ``call`` null: run the whole program (its last line is the assertion).
- ``call`` given: run the program without its last statement, then ``entry(*args)`` where
  ``args`` is read by ``ast.literal_eval`` (the parent checked the text first; it is data).

Result: ``lines`` = every line that has bytecode (the line table of the program's code objects,
nested ones included: what a bytecode coverage tool can report as missing), ``executed`` =
lines that produced a ``sys.settrace`` line event in a frame of the program, ``error`` = the
exception that ended the program (None when it ran to the end), ``stopped`` = the soft limit
that stopped it. Lines executed before an error or a stop are still reported.
"""

from __future__ import annotations

import ast
import sys
import threading
from types import CodeType, FrameType
from typing import Any

FILENAME = "<dexbench-program>"
_ERROR_CHARS = 300


def code_lines(code: CodeType) -> set[int]:
    lines = {line for _, _, line in code.co_lines() if line is not None and line > 0}
    for const in code.co_consts:
        if isinstance(const, CodeType):
            lines |= code_lines(const)
    return lines


def run(payload: dict[str, Any], sandbox: Any) -> dict[str, Any]:
    program: str = payload["program"]
    call = payload.get("call")
    whole = compile(program, FILENAME, "exec", dont_inherit=True)
    code, args = whole, ()
    if call is not None:
        tree = ast.parse(program)
        tree.body = tree.body[:-1]
        code = compile(tree, FILENAME, "exec", dont_inherit=True)
        args = ast.literal_eval(call["args"])
    executed: set[int] = set()

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != FILENAME:
            return None
        if event == "line":
            executed.add(frame.f_lineno)
        return tracer

    error = stopped = None
    namespace: dict[str, Any] = {"__name__": "__main__"}
    threading.settrace(tracer)
    sys.settrace(tracer)
    try:
        exec(code, namespace)
        if call is not None:
            namespace[call["entry"]](*args)
    except sandbox.Stopped as exc:
        stopped = str(exc)
    except BaseException as exc:  # the program's own failure is a result, not a crash
        error = f"{type(exc).__name__}: {exc}"[:_ERROR_CHARS]
    finally:
        sys.settrace(None)
        threading.settrace(None)
    return {
        "lines": sorted(code_lines(whole)),
        "executed": sorted(executed),
        "error": error,
        "stopped": stopped,
    }
