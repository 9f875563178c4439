"""Scorers of the `prompts` benchmark: a recorded answer against an item's `target`, 0 to 1.

Every scorer is a pure function of the item (its `target`, `choices`, `meta`), the answer text
and the scorer's options, so `tally grade` recomputes each score from an export row alone. A
scorer's `version` changes whenever its behaviour does; the export names both. docs/prompts.md
documents each one:

- `exact`: the normalised answer equals a normalised target;
- `includes`: a normalised target occurs in the normalised answer;
- `regex`: the first match of `pattern` in the answer (its first capture group, or the whole
  match) equals a target, both normalised;
- `number`: the last number in the answer is within `abs_tol` or `rel_tol` of the target;
- `choice`: the letter the answer picks names the target choice;
- `json`: the share of the target object's fields (or `fields`) the answer's JSON matches;
- `module:function`: the user's own, called as `function(item, answer)` -> bool or 0..1.

A target may be a list of acceptable answers (exact, includes, regex, number): the best score.
Normalisation (exact, includes, regex): `ignore_case`, `ignore_whitespace` (strip, collapse
runs to one space) and `ignore_punctuation` (drop Unicode punctuation).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import Any

import orjson

from evaltally.errors import ConfigError, DataError

BUILTIN = ("exact", "includes", "regex", "number", "choice", "json")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")
_LETTER_ONLY = re.compile(r"^\W*([A-Z])\W*$")
# "answer is B" / "Answer: (B)": the word in any case, the letter a capital ("the answer is a
# dog" picks nothing).
_LETTER_SAID = re.compile(r"\b(?i:answer)\s*(?:(?i:is)|:)?\s*:?\s*\(?([A-Z])\b")
_VERDICT = re.compile(r"VERDICT:\s*\**\s*(CORRECT|PARTIAL|INCORRECT)\b", re.IGNORECASE)
VERDICTS = {"CORRECT": 1.0, "PARTIAL": 0.5, "INCORRECT": 0.0}
_LETTER_ANY = re.compile(r"\(([A-Z])\)|\b([A-Z])[.)]|\b([A-Z])\b")


class ScoreError(ValueError):
    """An item or option a scorer cannot work with (named by the caller)."""


@dataclass(frozen=True)
class ScorerSpec:
    """Which scorer and its options, as every export row records it."""

    name: str
    version: str
    options: Mapping[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "options": dict(self.options)}


def normalise(text: str, options: Mapping[str, Any]) -> str:
    if options.get("ignore_punctuation", False):
        text = "".join(c for c in text if not unicodedata.category(c).startswith("P"))
    if options.get("ignore_whitespace", True):
        text = " ".join(text.split())
    if options.get("ignore_case", True):
        text = text.casefold()
    return text


def _targets(item: Mapping[str, Any]) -> list[Any]:
    target = item.get("target")
    if target is None:
        raise ScoreError("the item has no 'target'")
    return list(target) if isinstance(target, list) else [target]


def _exact(item: Mapping[str, Any], answer: str, options: Mapping[str, Any]) -> float:
    got = normalise(answer, options)
    return float(any(got == normalise(str(t), options) for t in _targets(item)))


def _includes(item: Mapping[str, Any], answer: str, options: Mapping[str, Any]) -> float:
    got = normalise(answer, options)
    return float(any(normalise(str(t), options) in got for t in _targets(item)))


def _regex(item: Mapping[str, Any], answer: str, options: Mapping[str, Any]) -> float:
    match = re.search(str(options["pattern"]), answer)
    if match is None:
        return 0.0
    found = match.group(1) if match.re.groups else match.group(0)
    return _exact(item, found or "", options)


def parse_number(text: str) -> float | None:
    """The last number written in `text` (thousands separators allowed), or None."""
    found = _NUMBER.findall(text)
    if not found:
        return None
    return float(found[-1].replace(",", ""))


def _number(item: Mapping[str, Any], answer: str, options: Mapping[str, Any]) -> float:
    got = parse_number(answer)
    if got is None:
        return 0.0
    abs_tol = float(options.get("abs_tol", 0.0))
    rel_tol = float(options.get("rel_tol", 0.0))
    for target in _targets(item):
        want = target if isinstance(target, int | float) else parse_number(str(target))
        if want is None:
            raise ScoreError(f"target {target!r} is not a number")
        if math.isclose(got, float(want), rel_tol=rel_tol, abs_tol=abs_tol):
            return 1.0
    return 0.0


def choice_letter(item: Mapping[str, Any]) -> str:
    """The letter of the item's correct choice: its target is a letter or a choice's text."""
    choices = item.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ScoreError("the choice scorer needs a non-empty 'choices' list")
    target = str(_targets(item)[0]).strip()
    if len(target) == 1 and target.upper() in LETTERS[: len(choices)]:
        return target.upper()
    if target in choices:
        return LETTERS[choices.index(target)]
    raise ScoreError(f"target {target!r} is neither a choice letter nor one of the choices")


def picked_letter(answer: str, n_choices: int) -> str | None:
    """The choice letter an answer picks: the whole answer, "answer is X", else the first
    letter standing alone among the valid ones."""
    valid = LETTERS[:n_choices]
    for pattern in (_LETTER_ONLY, _LETTER_SAID):
        match = pattern.search(answer.strip())
        if match and match.group(1).upper() in valid:
            return match.group(1).upper()
    for match in _LETTER_ANY.finditer(answer):
        letter = next(g for g in match.groups() if g)
        if letter in valid:
            return letter
    return None


def _choice(item: Mapping[str, Any], answer: str, options: Mapping[str, Any]) -> float:
    want = choice_letter(item)
    return float(picked_letter(answer, len(item["choices"])) == want)


def json_value(answer: str) -> Any:
    """The JSON value an answer holds, inside a ``` fence or not; raises ValueError."""
    text = answer.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fence:
        text = fence.group(1).strip()
    return orjson.loads(text)


def _same(a: Any, b: Any) -> bool:
    # JSON equality: booleans are not numbers, object key order is ignored.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _field(value: Any, path: str) -> tuple[bool, Any]:
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return False, None
        value = value[key]
    return True, value


def _json(item: Mapping[str, Any], answer: str, options: Mapping[str, Any]) -> float:
    target = item.get("target")
    if not isinstance(target, dict) or not target:
        raise ScoreError("the json scorer needs a non-empty JSON object as 'target'")
    try:
        got = json_value(answer)
    except ValueError:
        return 0.0
    fields = list(options.get("fields") or sorted(target))
    hits = 0
    for path in fields:
        has_want, want = _field(target, path)
        if not has_want:
            raise ScoreError(f"field {path!r} is not in the target")
        has_got, value = _field(got, path)
        hits += has_got and _same(value, want)
    return hits / len(fields)


ScoreFn = Callable[[Mapping[str, Any], str, Mapping[str, Any]], float]
_BUILTINS: dict[str, tuple[str, ScoreFn]] = {
    "exact": ("1", _exact),
    "includes": ("1", _includes),
    "regex": ("1", _regex),
    "number": ("1", _number),
    "choice": ("1", _choice),
    "json": ("1", _json),
}


def user_function(name: str) -> Callable[..., Any]:
    """The user's `module:function` scorer, imported."""
    module, _, attr = name.partition(":")
    try:
        fn = getattr(import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ScoreError(f"cannot import scorer {name!r}: {exc}") from None
    if not callable(fn):
        raise ScoreError(f"scorer {name!r} is not a function")
    return fn  # type: ignore[no-any-return]


def scorer_version(name: str) -> str:
    if name in _BUILTINS:
        return _BUILTINS[name][0]
    return str(getattr(user_function(name), "version", "unversioned"))


def score(spec: Mapping[str, Any], item: Mapping[str, Any], answer: str) -> float:
    """The score of `answer` for `item` under the scorer `spec` (an export row's `scorer`)."""
    name = str(spec["name"])
    options = spec.get("options") or {}
    if name in _BUILTINS:
        return _BUILTINS[name][1](item, answer, options)
    value = user_function(name)(dict(item), answer)
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ScoreError(f"scorer {name!r} returned {value!r}; it must return a bool or 0..1")
    return float(value)


def check_scorer_name(name: str, where: Callable[[str, str], ConfigError]) -> None:
    if name in BUILTIN or name == "model":
        return
    if ":" not in name:
        valid = ", ".join((*BUILTIN, "model"))
        raise where("scorer", f"unknown scorer {name!r}; use one of {valid} or module:function")
    try:
        user_function(name)
    except ScoreError as exc:
        raise where("scorer", str(exc)) from None


def score_row(row: Mapping[str, Any], item: Mapping[str, Any], spec: Mapping[str, Any]) -> Any:
    """An export row's score: None without an answer, 0 for an unparsed one (a model outcome,
    wrong), else the scorer's verdict on the raw answer text."""
    if row["status"] == "parse_error":
        return 0.0
    if row["status"] != "ok" or row.get("raw_text") is None:
        return None
    try:
        return score(spec, item, str(row["raw_text"]))
    except ScoreError as exc:
        raise DataError(f"call {row['call_id']} (item {row['item_id']!r}): {exc}") from None


def verdict_value(text: str) -> float | None:
    """The `model` scorer's verdict: the last `VERDICT: CORRECT|PARTIAL|INCORRECT` line of a
    grader's answer as 1 / 0.5 / 0, or None."""
    found = _VERDICT.findall(text)
    return VERDICTS[found[-1].upper()] if found else None


def verdict_score(row: Mapping[str, Any]) -> float | None:
    """A verdict row's score, from its raw text alone (None: the grader gave no verdict)."""
    if row["status"] != "ok" or row.get("raw_text") is None:
        return None
    return verdict_value(str(row["raw_text"]))
