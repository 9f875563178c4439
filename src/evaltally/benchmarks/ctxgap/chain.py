"""What each step of a CTXGAP chain sends, from the data alone.

A chain is one (probe, view): step 0 asks the observer role the probe's question over the view's
text (for an actor view: at the end of the actor's own transcript); step 1 asks the judge role to
score the observer's recorded answer against the reference. The observer's inputs are built from
the question and the view only, so nothing the observer must not see can reach it;
`tally ctxgap export-observer-inputs` writes exactly these.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from evaltally.prompts.ctxgap import (
    ACTOR_PROMPT_VERSION,
    OBSERVER_PROMPT_VERSION,
    render_actor,
    render_judge,
    render_observer,
)
from evaltally.records import Message

from .data import Dataset, Probe, View

#: The fields of an observer-input row, in order (docs/ctxgap.md).
OBSERVER_ROW_FIELDS = (
    "probe_id",
    "task_id",
    "checkpoint",
    "view",
    "prompt_version",
    "question",
    "view_text",
    "messages",
)


def observer_messages(probe: Probe, view: View) -> list[Message]:
    """An observer reads the view's text; an actor view continues the actor's own chat."""
    if view.messages is not None:
        return render_actor(question=probe.question, transcript=view.messages)
    return render_observer(question=probe.question, view_text=view.text)


def observer_version(view: View) -> str:
    return ACTOR_PROMPT_VERSION if view.messages is not None else OBSERVER_PROMPT_VERSION


def judge_messages(probe: Probe, answer: str) -> list[Message]:
    """The judge sees the question, the reference and the answer; which view produced the
    answer is not an argument, so it cannot be shown."""
    return render_judge(question=probe.question, reference=probe.reference, answer=answer)


def observer_row(probe: Probe, view: View) -> dict[str, Any]:
    """Identifiers, the two inputs of the observer prompt, and the messages sent."""
    return {
        "probe_id": probe.probe_id,
        "task_id": probe.task_id,
        "checkpoint": probe.checkpoint,
        "view": view.name,
        "prompt_version": observer_version(view),
        "question": probe.question,
        "view_text": view.text,
        "messages": observer_messages(probe, view),
    }


def observer_rows(dataset: Dataset) -> Iterator[dict[str, Any]]:
    """One row per planned (probe, view), in probe-file order, views in checkpoint order."""
    for probe, view in dataset.planned():
        yield observer_row(probe, view)
