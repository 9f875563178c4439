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
from collections.abc import Mapping, Sequence
from typing import Any

from evaltally.records import Message

PROMPT_VERSION = "cte-v1"

#: Shown in a free rollout in place of a prediction that did not parse (as the release does).
INVALID_PREDICTION: dict[str, Any] = {"error": {"code": "MODEL_INVALID_JSON"}}

SYSTEM = (
    "You simulate a stateful software service exactly as its Python source code specifies. "
    "You are given the source, a change made to the service, the calls it has handled so far "
    "with their responses, and a new call. Work out the service's state and answer the new "
    "call with the exact JSON object the service returns. Output valid JSON only: no prose, "
    "no explanation, no markdown fences."
)


def dump(value: Any, *, sort_keys: bool = False) -> str:
    # args keep their stored order on purpose: the services take them positionally.
    return json.dumps(value, ensure_ascii=False, sort_keys=sort_keys)


def call_line(op: str, args: dict[str, Any], response: Any, *, sort_keys: bool = False) -> str:
    """One shown call, `op(args-json) -> response-json`. `sort_keys` is set for model
    predictions: the ledger stores parsed answers canonically (sorted keys), so a resumed
    chain must show them the same way as the session that first rendered them."""
    return f"{op}({dump(args)}) -> {dump(response, sort_keys=sort_keys)}"


def format_history(lines: Sequence[str]) -> str:
    if not lines:
        return "(none)"
    return "\n".join(f"{n}. {line}" for n, line in enumerate(lines, 1))


def intervention_block(iv: Mapping[str, Any], source: str) -> str:
    """`iv`: {"source_edit": bool, "description": str, and for a source edit "line_number",
    "original_span", "modified_span"; for a state overwrite "path" (list), "from_value",
    "to_value"}."""
    if iv["source_edit"]:
        lines = source.splitlines()
        ln = iv.get("line_number") or 0
        changed = lines[ln - 1] if 0 < ln <= len(lines) else ""
        text = (
            "Right after the last call in the history below, one token of the source was "
            "edited and the service was reloaded from its existing state (the state is "
            "unchanged; only the code changed). The source shown above is the edited source.\n"
            f"- changed line {ln} (1-based) now reads: {changed.strip()}\n"
            f"- old token: {iv.get('original_span')}\n"
            f"- new token: {iv.get('modified_span')}"
        )
    else:
        path = list(iv.get("path") or ())
        text = (
            "Right after the last call in the history below, the service's hidden state was "
            "overwritten; the code is unchanged (the source shown above is what runs).\n"
            f"- state path: {'.'.join(path)} (as a list: {dump(path)})\n"
            f"- old value: {dump(iv.get('from_value'))}\n"
            f"- new value: {dump(iv.get('to_value'))}"
        )
    if iv.get("description"):
        text += f"\n- description: {iv['description']}"
    return text


def render(
    *,
    source: str,
    intervention: Mapping[str, Any],
    history: Sequence[str],
    op: str,
    args: dict[str, Any],
) -> list[Message]:
    """The messages of one scored call."""
    user = (
        "## Service source\n"
        f"```python\n{source.rstrip()}\n```\n\n"
        "## Intervention\n"
        f"{intervention_block(intervention, source)}\n\n"
        "## Call history (oldest first)\n"
        f"{format_history(history)}\n\n"
        "## New call\n"
        f"{op}({dump(args)})\n\n"
        "Output only the complete JSON response of the service to this new call."
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
