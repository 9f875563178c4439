"""CTE-Bench prompts (wording ours, structure as the release's evaluation script).

One request per scored call: a system message and one user message holding, in order, the
service source, the intervention, the prior call history (`op(args) -> response`, numbered
from 1 within what is shown), and the new request. What goes into the history depends on the
protocol and is decided by the caller (`evaltally.benchmarks.cte.benchmark`); this module only
formats plain data (the intervention arrives as a dict, see `intervention_block`). Rendering is
a pure function: the same inputs give the same bytes, which is what lets a resumed free
rollout prove it sends the recorded requests again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaltally.records import Message

PROMPT_VERSION = "cte-v3"
#: cte-v1 said the intervention came "right after the last call in the history below" in every
#: prompt, which the lines shown contradict from the second scored call on. cte-v2 called the
#: history "the calls it has handled so far" in every protocol (a no-feedback history omits every
#: call after the intervention) and kept the record's "at step N" (0-based over the whole trace)
#: beside a history numbered from 1. Both still render, so runs planned with them resume with
#: their recorded bytes (`prompt_version = "cte-v1"` / `"cte-v2"`).
PROMPT_VERSIONS = ("cte-v1", "cte-v2", "cte-v3")

#: The unnumbered history line at the boundary between observed and post-intervention calls.
INTERVENTION_MARK = "--- the intervention happened here ---"

#: Shown in a free rollout in place of a prediction that did not parse (as the release does).
INVALID_PREDICTION: dict[str, Any] = {"error": {"code": "MODEL_INVALID_JSON"}}

#: The system message of cte-v1 and cte-v2 (kept byte for byte so their runs resume).
SYSTEM_V2 = (
    "You simulate a stateful software service exactly as its Python source code specifies. "
    "You are given the source, a change made to the service, the calls it has handled so far "
    "with their responses, and a new call. Work out the service's state and answer the new "
    "call with the exact JSON object the service returns. Output valid JSON only: no prose, "
    "no explanation, no markdown fences."
)

_SYSTEM_HEAD = (
    "You simulate a stateful software service exactly as its Python source code specifies. "
    "You are given the source, a change made to the running service, a history of calls it "
    "handled, and a new call. "
)
_SYSTEM_TAIL = (
    " Work out the service's state and answer the new call with the exact JSON object the "
    "service returns. Output valid JSON only: no prose, no explanation, no markdown fences."
)

#: What each protocol's history holds and leaves out (cte-v3); `{window}` is the window size.
SHOWN = {
    "answers_revealed": (
        "The history holds only the most recent calls before the new one (at most {window}), "
        "each with the service's true response; older calls are not shown."
    ),
    "no_feedback": (
        "The history holds the calls made before the change, with the service's true "
        "responses. Calls made after the change and before the new call are not shown: the "
        "service handled them, so its state, and anything they created (such as tokens or "
        "ids), may differ from what the history alone implies."
    ),
    "free_rollout": (
        "The history holds only the most recent calls before the new one (at most {window}); "
        "older calls are not shown. Calls made before the change carry the service's true "
        "responses; calls made after it carry your own earlier predictions, not the true "
        'responses (an answer that could not be read is shown as {{"error": {{"code": '
        '"MODEL_INVALID_JSON"}}}}).'
    ),
    "full_history": (
        "The history holds every call the service handled before the new one, each with its "
        "true response."
    ),
}


def system_message(protocol: str, window: int, version: str = PROMPT_VERSION) -> str:
    """The system message: in cte-v3 it says what the protocol's history shows and omits."""
    if version in ("cte-v1", "cte-v2"):
        return SYSTEM_V2
    return _SYSTEM_HEAD + SHOWN[protocol].format(window=window) + _SYSTEM_TAIL


def dump(value: Any, *, sort_keys: bool = False) -> str:
    # args keep their stored order on purpose: the services take them positionally.
    return json.dumps(value, ensure_ascii=False, sort_keys=sort_keys)


def call_line(op: str, args: dict[str, Any], response: Any, *, sort_keys: bool = False) -> str:
    """One shown call, `op(args-json) -> response-json`. `sort_keys` is set for model
    predictions: the ledger stores parsed answers canonically (sorted keys), so a resumed
    chain must show them the same way as the session that first rendered them."""
    return f"{op}({dump(args)}) -> {dump(response, sort_keys=sort_keys)}"


@dataclass(frozen=True)
class History:
    """The calls a prompt shows, oldest first, and where the intervention falls among them.

    ``observed`` of the ``lines`` ran before the intervention (they come first); the rest ran
    after it. ``hidden_after`` counts calls made after the intervention that are older than the
    first line shown (a window dropped them), so the boundary is not among the lines at all.
    ``unlisted`` counts calls made after the last line shown and before the new call (a
    no-feedback history stops at the intervention). ``first`` is the 0-based trace index of the
    first line shown, which maps a record's "at step N" (0-based over the trace) to the
    history's own numbering.
    """

    lines: Sequence[str]
    observed: int
    hidden_after: int = 0
    unlisted: int = 0
    first: int = 0

    @property
    def mark_at(self) -> int | None:
        """How many lines precede the boundary, when the boundary is among the lines shown."""
        return self.observed if self.hidden_after == 0 and self.lines else None


def format_history(history: History, version: str = PROMPT_VERSION) -> str:
    if not history.lines:
        return "(none)"
    numbered = [f"{n}. {line}" for n, line in enumerate(history.lines, 1)]
    mark = history.mark_at
    if version != "cte-v1" and mark is not None:
        numbered.insert(mark, INTERVENTION_MARK)
    return "\n".join(numbered)


def when(history: History, version: str = PROMPT_VERSION) -> str:
    """Where the intervention happened, relative to the history lines shown."""
    n, k = len(history.lines), history.observed
    if version == "cte-v1":
        return "Right after the last call in the history below"
    if n == 0:
        return "Right before the new call (no earlier call is shown)"
    if history.hidden_after:
        return (
            "Before every call in the history below: every call shown ran after it, and the "
            f"{history.hidden_after} calls between it and the first call shown are not listed"
        )
    if k == n:
        later = ""
        if history.unlisted and version != "cte-v2":
            later = (
                f"; the {history.unlisted} calls made after it and before the new call are not "
                "shown"
            )
        return (
            "Right after the last call in the history below (at the marked line; every call "
            f"shown ran before it{later})"
        )
    if k == 0:
        return (
            "Right before the first call in the history below (at the marked line; every call "
            "shown ran after it)"
        )
    return (
        f"Right after call {k} of the history below (at the marked line): calls 1-{k} ran "
        f"before it and calls {k + 1}-{n} after it"
    )


def intervention_block(
    iv: Mapping[str, Any], source: str, history: History, version: str = PROMPT_VERSION
) -> str:
    """`iv`: {"source_edit": bool, "description": str, and for a source edit "line_number",
    "original_span", "modified_span"; for a state overwrite "path" (list), "from_value",
    "to_value"}."""
    at = when(history, version)
    if iv["source_edit"]:
        lines = source.splitlines()
        ln = iv.get("line_number") or 0
        changed = lines[ln - 1] if 0 < ln <= len(lines) else ""
        text = (
            f"{at}, one token of the source was "
            "edited and the service was reloaded from its existing state (the state is "
            "unchanged; only the code changed). The source shown above is the edited source.\n"
            f"- changed line {ln} (1-based) now reads: {changed.strip()}\n"
            f"- old token: {iv.get('original_span')}\n"
            f"- new token: {iv.get('modified_span')}"
        )
    else:
        path = list(iv.get("path") or ())
        text = (
            f"{at}, the service's hidden state was "
            "overwritten; the code is unchanged (the source shown above is what runs).\n"
            f"- state path: {'.'.join(path)} (as a list: {dump(path)})\n"
            f"- old value: {dump(iv.get('from_value'))}\n"
            f"- new value: {dump(iv.get('to_value'))}"
        )
    if iv.get("description"):
        text += f"\n- description: {describe(str(iv['description']), history, version)}"
    return text


_AT_STEP = re.compile(r"\bat step (\d+)\b")


def describe(description: str, history: History, version: str = PROMPT_VERSION) -> str:
    """The record's description with its "at step N" (0-based over the whole trace, as the
    release writes state interventions) restated in the history's numbering (cte-v3)."""
    if version in ("cte-v1", "cte-v2"):
        return description

    def position(match: re.Match[str]) -> str:
        at = int(match.group(1)) - history.first  # 0-based among the lines shown
        if 0 <= at < len(history.lines):
            return f"right after call {at + 1} of the history below"
        if at < 0:
            return "before the first call of the history below (after a call it does not show)"
        return "after the last call of the history below"

    return _AT_STEP.sub(position, description)


def render(
    *,
    source: str,
    intervention: Mapping[str, Any],
    history: History,
    op: str,
    args: dict[str, Any],
    protocol: str,
    window: int,
    version: str = PROMPT_VERSION,
) -> list[Message]:
    """The messages of one scored call."""
    user = (
        "## Service source\n"
        f"```python\n{source.rstrip()}\n```\n\n"
        "## Intervention\n"
        f"{intervention_block(intervention, source, history, version)}\n\n"
        "## Call history (oldest first)\n"
        f"{format_history(history, version)}\n\n"
        "## New call\n"
        f"{op}({dump(args)})\n\n"
        "Output only the complete JSON response of the service to this new call."
    )
    system = system_message(protocol, window, version)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
