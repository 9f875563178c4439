"""Offline answerers of the `prompts` benchmark (`provider = "baseline"`), for demos and tests:

- `oracle` answers every scored item correctly, in the form its scorer reads (the choice's
  letter, the JSON target, the target itself for `exact`, "The answer is <target>" for the
  others);
- `guesser` answers like `oracle` on about two items in three (chosen by a hash of the item
  id, so the same items every run) and "I do not know." on the rest;
- `echo` answers with the item's last user message (every unscored step answers this way).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from evaltally.benchmarks.base import Predictor
from evaltally.benchmarks.prompts.scorers import choice_letter
from evaltally.prompts.prompts import question_text


def _echo(context: Mapping[str, Any]) -> str:
    return question_text(context["item"])


def _oracle(context: Mapping[str, Any]) -> str:
    scorer = context.get("scorer")
    if scorer is None:
        return _echo(context)
    item = context["item"]
    name = scorer["name"]
    if name == "choice":
        return choice_letter(item)
    target = item["target"]
    if name == "json":
        return orjson.dumps(target).decode()
    first = target[0] if isinstance(target, list) else target
    return str(first) if name == "exact" else f"The answer is {first}"


def _guesser(context: Mapping[str, Any]) -> str:
    digest = hashlib.sha256(str(context["item"]["id"]).encode()).digest()
    if context.get("scorer") is not None and digest[0] % 3 == 0:
        return "I do not know."
    return _oracle(context)


PREDICTORS: Mapping[str, Predictor] = {"oracle": _oracle, "guesser": _guesser, "echo": _echo}
