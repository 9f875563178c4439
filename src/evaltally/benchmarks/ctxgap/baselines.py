"""Offline stand-ins for `provider = "baseline"` models: a keyless, networkless CTXGAP run.

They read `CtxgapBenchmark.offline_context` (oracle inputs: the reference among them), so none
of them is an observer or a judge under evaluation; they are controls whose numbers are known
in advance, which is what makes an offline run a check of the whole pipeline:

Observers (bind them to the `observer` role):
- `reference`: answers with the probe's reference answer itself: the ceiling. With the
  `exact_match` judge every unit scores 1: every accuracy is 100%, every gap 0.
- `dont_know`: always answers `NOT IN DOCUMENT` (what the observer prompt tells a model to say
  when the view lacks the answer): the floor, every accuracy 0%.
- `verbatim`: answers the reference when the view's text contains it word for word (after
  `normalize`), else `NOT IN DOCUMENT`: a reader that recovers only facts stated verbatim, so
  its accuracy depends on the view.

Judge (bind it to the `judge` role):
- `exact_match`: `VERDICT: 1` when the answer equals the reference after `normalize`, else
  `VERDICT: 0`. A mechanical stand-in, not a judge: it never gives 0.5 and scores a correct
  paraphrase 0. It exists so the example runs offline; real verdicts need a judge model (or
  `tally ctxgap score-labels`).

A stand-in bound to the wrong role fails its calls with a reason naming the role it answers.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from evaltally.prompts.ctxgap import NOT_IN_DOCUMENT, VERDICT_PREFIX

OBSERVER = "observer"
JUDGE = "judge"


def normalize(text: str) -> str:
    """NFKC, case-folded, whitespace runs as one space, no surrounding spaces or final dots."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split()).strip(" .")


def _reference(context: Mapping[str, Any]) -> str:
    return str(context["reference"])


def _dont_know(context: Mapping[str, Any]) -> str:
    return NOT_IN_DOCUMENT


def _verbatim(context: Mapping[str, Any]) -> str:
    reference = str(context["reference"])
    found = normalize(reference) in normalize(str(context["view_text"]))
    return reference if found else NOT_IN_DOCUMENT


def _exact_match(context: Mapping[str, Any]) -> str:
    same = normalize(str(context["answer"])) == normalize(str(context["reference"]))
    why = "matches" if same else "does not match"
    return (
        f"Mechanical stand-in: the normalized answer {why} the reference.\n"
        f"{VERDICT_PREFIX} {1 if same else 0}"
    )


def _for_role(
    name: str, role: str, answer: Callable[[Mapping[str, Any]], str]
) -> Callable[[Mapping[str, Any]], str]:
    def predict(context: Mapping[str, Any]) -> str:
        if context["role"] != role:
            raise ValueError(
                f"baseline {name!r} answers {role} steps only; bind it with "
                f'[benchmarks.roles] {role} = ["..."]'
            )
        return answer(context)

    return predict


OFFLINE_PREDICTORS = {
    "reference": _for_role("reference", OBSERVER, _reference),
    "dont_know": _for_role("dont_know", OBSERVER, _dont_know),
    "verbatim": _for_role("verbatim", OBSERVER, _verbatim),
    "exact_match": _for_role("exact_match", JUDGE, _exact_match),
}
