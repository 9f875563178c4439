"""SCAE judge prompts (wording ours): name the one step of a trajectory to blame.

Two visibility conditions share one versioned rubric and differ only in what the user message
shows (docs/scae.md, "Judge conditions"):

- full: every step of the trajectory and its outcome;
- prefix: the first k steps (k fixed in advance from the trajectory length) and no outcome.

The rubric text is identical in both conditions, and says that either view may be shown, so the
only difference between the two requests is the visible steps and the outcome section. This
module is pure: plain strings in, messages out; it imports nothing from `evaltally.benchmarks`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from evaltally.records import Message

PROMPT_VERSION = "scae-judge-v2"
#: v1 headed the trajectory "steps 1-k of T", which told a prefix judge the trajectory's length
#: (downstream information); v2 says "steps 1-k" in both conditions. v1 renders only to resume
#: a run planned with it.
PROMPT_VERSIONS = ("scae-judge-v1", PROMPT_VERSION)

SYSTEM = (
    "You audit the trajectory of an automated software agent. A trajectory is a numbered "
    "sequence of steps; each step is one tool call with its target and the output the tool "
    "returned. You are shown either the whole trajectory together with its outcome, or only "
    "its first steps with the outcome withheld. Judge only from what is shown. Answer with one "
    "JSON object and nothing else: no prose before or after it, no markdown."
)

#: The question each rubric asks; the rubric's name is recorded with every judge call.
RUBRICS: Mapping[str, str] = {
    # SCAE episodes (issue 12, item 2): the paper's most-responsible-step question.
    "blame-v1": (
        "Which single step among those shown is most responsible for how the task turned out? "
        "Consider what each step did and what it revealed, and name the one step that mattered "
        "most."
    ),
    # CTE free rollouts judged against the executor's certified first wrong call (item 5).
    "first-wrong-v1": (
        "Each step's output is a prediction made by a model simulating the service, not the "
        "service's true response. Which step among those shown is the first whose predicted "
        "output is wrong, that is, differs from what the service as specified would return "
        "given the calls before it? Name that one step."
    ),
}

NOT_SHOWN = "Not shown."

_BACKTICKS = re.compile(r"`+")


def _fence(text: str) -> str:
    """`text` in a fenced block whose fence is longer than any backtick run inside it, so tool
    output can never close the block early or pose as a section of this prompt."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def render_step(number: int, tool: str, target: str | None, output: str) -> str:
    return (
        f"### Step {number}\n"
        f"tool: {tool}\n"
        f"target: {target if target is not None else '(none)'}\n"
        f"output:\n{_fence(output)}"
    )


def render(
    *,
    rubric: str,
    task: str,
    steps: Sequence[Mapping[str, str | None]],
    total_steps: int,
    outcome: str | None,
    version: str = PROMPT_VERSION,
) -> list[Message]:
    """The messages of one judge call.

    `steps` are the visible steps in order (`tool`, `target`, `output`), numbered from 1;
    `total_steps` is the trajectory's full length (shown only by version v1); `outcome` is None
    when it is withheld."""
    if version not in PROMPT_VERSIONS:
        raise ValueError(f"unknown prompt version {version!r}; known: {', '.join(PROMPT_VERSIONS)}")
    if rubric not in RUBRICS:
        raise ValueError(f"unknown rubric {rubric!r}; known: {', '.join(sorted(RUBRICS))}")
    visible = len(steps)
    if not 1 <= visible <= total_steps:
        raise ValueError(f"{visible} visible steps of a {total_steps}-step trajectory")
    shown = "\n\n".join(
        render_step(n, str(s["tool"]), s.get("target"), str(s.get("output") or ""))
        for n, s in enumerate(steps, 1)
    )
    length = f" of {total_steps}" if version == "scae-judge-v1" else ""
    user = (
        f"## Task\n{task.rstrip()}\n\n"
        f"## Trajectory: steps 1-{visible}{length}\n\n{shown}\n\n"
        f"## Outcome\n{outcome.rstrip() if outcome is not None else NOT_SHOWN}\n\n"
        f"## Question\n{RUBRICS[rubric]}\n\n"
        f'Answer with exactly one JSON object: {{"step": <the number of one step shown above, '
        f'1 to {visible}>, "reason": "<one sentence>"}}'
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
