"""A verification worker process: JSON lines in, verdicts out (see runner/workers.py).

Each request `{"function": "module:name", "args", "timeout_s"}` calls `function(args)`; the
reply is `{"verdict", "detail", "reason"}`. Anything the function prints goes to stderr, so it
cannot corrupt the replies. The function comes from a benchmark (trusted code); the model's
answer is only ever data inside `args`, and a check that must run a program the answer can
turn into code runs it inside the OS boundary (`sandbox.inline`), never in this process.
"""

from __future__ import annotations

import math
import os
import signal
import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any

import orjson

VERDICTS = ("passed", "failed")


def _function(ref: str, cache: dict[str, Callable[[Any], Any]]) -> Callable[[Any], Any]:
    if ref not in cache:
        module, _, name = ref.partition(":")
        cache[ref] = getattr(import_module(module), name)
    return cache[ref]


def answer(request: dict[str, Any], cache: dict[str, Callable[[Any], Any]]) -> dict[str, Any]:
    reply: dict[str, Any] = {"detail": None, "reason": None}
    # The parent kills a worker whose job overruns; the alarm ends it even when the parent is
    # gone (killed with -9), so no orphaned check outlives its time limit by much.
    signal.alarm(math.ceil(float(request.get("timeout_s") or 60)) + 1)
    try:
        result = _function(str(request["function"]), cache)(request.get("args"))
    except Exception as exc:  # the check itself broke: recorded as an error verdict
        return {**reply, "verdict": "error", "reason": f"the check raised {exc!r}"}
    finally:
        signal.alarm(0)
    if not isinstance(result, dict) or result.get("verdict") not in VERDICTS:
        return {
            **reply,
            "verdict": "error",
            "reason": f"the check returned {result!r:.200}; expected a verdict of {VERDICTS}",
        }
    return {**reply, "verdict": result["verdict"], "detail": result.get("detail")}


def main() -> None:
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # print() in a check lands on stderr, never among the replies
    cache: dict[str, Callable[[Any], Any]] = {}
    for line in sys.stdin.buffer:
        reply = answer(orjson.loads(line), cache)
        try:
            data = orjson.dumps(reply)
        except TypeError as exc:
            data = orjson.dumps(
                {**reply, "verdict": "error", "detail": None, "reason": f"detail not JSON: {exc}"}
            )
        replies.write(data + b"\n")
        replies.flush()


if __name__ == "__main__":
    main()
