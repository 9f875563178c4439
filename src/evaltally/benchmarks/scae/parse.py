"""Reading a judge's answer strictly: the one step it blames, or why there is none.

Three parse outcomes (docs/scae.md, "Parsing the judge"):

- `ok`: one JSON object with an integer `step` in 1..k, k the number of visible steps;
- `out_of_range`: such an object whose `step` lies outside 1..k (a step the judge was not
  shown, or 0, or negative) — kept apart because it says something about the judge;
- `unparsable`: anything else, never guessed at: no JSON object, several JSON objects, JSON
  that is not an object (`[{"step": 3}]`, `3`), no `step` key, or a `step` that is not an
  integer (`"3"`, `3.0`, `true` are refused).

Routes: `strict` (the whole text, surrounding whitespace allowed, is the object) and
`embedded` (exactly one balanced `{...}` in the text decodes to a JSON object — e.g. inside a
markdown fence or after a sentence). Other keys (`reason`, ...) are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from evaltally.benchmarks.base import ParseResult
from evaltally.benchmarks.cte.parse import first_object

OK = "ok"
OUT_OF_RANGE = "out_of_range"
UNPARSABLE = "unparsable"


@dataclass(frozen=True, slots=True)
class JudgeAnswer:
    outcome: str
    """`ok`, `out_of_range` or `unparsable`."""
    step: int | None = None
    """The named step (1-based) for `ok` and `out_of_range`."""
    path: str | None = None
    error: str | None = None


_NOT_JSON = object()


def _decode(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _NOT_JSON


def _embedded(text: str) -> list[dict[str, Any]]:
    """Every balanced top-level `{...}` of `text` that decodes to a JSON object."""
    found = []
    rest = text
    while (segment := first_object(rest)) is not None:
        value = _decode(segment)
        if isinstance(value, dict):
            found.append(value)
        rest = rest[rest.index(segment) + len(segment) :]
    return found


def parse_judge(text: str, visible: int) -> JudgeAnswer:
    """The judge's answer given that steps 1..`visible` were shown."""
    value = _decode(text)
    path = "strict"
    if value is not _NOT_JSON and not isinstance(value, dict):
        return JudgeAnswer(
            UNPARSABLE, error=f"the answer is JSON but not an object ({type(value).__name__})"
        )
    if value is _NOT_JSON:
        path = "embedded"
        objects = _embedded(text)
        if not objects:
            return JudgeAnswer(UNPARSABLE, error="no JSON object in the answer")
        if len(objects) > 1:
            return JudgeAnswer(
                UNPARSABLE, error=f"{len(objects)} JSON objects in the answer; refusing to choose"
            )
        value = objects[0]
    if "step" not in value:
        return JudgeAnswer(UNPARSABLE, error="the JSON object has no `step` key")
    step = value["step"]
    if isinstance(step, bool) or not isinstance(step, int):
        return JudgeAnswer(
            UNPARSABLE, error=f"`step` must be an integer, got {type(step).__name__}"
        )
    if not 1 <= step <= visible:
        return JudgeAnswer(
            OUT_OF_RANGE, step=step, path=path,
            error=f"step {step} is outside the visible steps 1-{visible}",
        )  # fmt: skip
    return JudgeAnswer(OK, step=step, path=path)


def to_parse_result(answer: JudgeAnswer) -> ParseResult:
    """The benchmark-contract form: only `ok` parses; `out_of_range` keeps its own path and an
    error starting with `out_of_range:` so a ledger row still tells the two failures apart
    (re-parsing `raw_text` with `parse_judge` gives the same outcome)."""
    if answer.outcome == OK:
        return ParseResult(ok=True, value={"step": answer.step}, path=answer.path)
    if answer.outcome == OUT_OF_RANGE:
        return ParseResult(ok=False, path=OUT_OF_RANGE, error=f"{OUT_OF_RANGE}: {answer.error}")
    return ParseResult(ok=False, error=f"{UNPARSABLE}: {answer.error}")


def recorded_answer(status: str, raw_text: str | None, visible: int) -> tuple[str, int | None]:
    """(judge status, blamed step) of a recorded call: a ledger `ok`/`parse_error` answer is
    re-read with `parse_judge` (deterministic, so an export alone tells `out_of_range` from
    `unparsable`); `failed`, `blocked` and `unfinished` calls have no answer and keep their
    status."""
    if status not in ("ok", "parse_error"):
        return status, None
    answer = parse_judge(raw_text or "", visible)
    return answer.outcome, answer.step if answer.outcome == OK else None
