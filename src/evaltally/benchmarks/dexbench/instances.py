"""DexBench instance records: the schema, writing and reading (docs/dexbench.md, "Instances").

One JSON object per line, keys in the order of ``Instance``'s fields, written with
``json.dumps(..., ensure_ascii=False)`` and ``\\n`` line ends, so a rebuild from the same
upstream files gives the same bytes. The package ships the CRUXEval + HumanEval instances
(``BUILTIN``); PythonSaga instances exist only where a user builds them from their own copy.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from evaltally.errors import DataError
from evaltally.jsonl import read_objects

from .lines import RULES

SOURCES = ("cruxeval", "humaneval", "pythonsaga")


@dataclass(frozen=True)
class Instance:
    """One paired forward/backward task."""

    id: str
    """``<source>/<source_id>``: stable across rebuilds."""
    source: str
    source_id: str
    """CRUXEval ``sample_N``, HumanEval ``HumanEval/N``, PythonSaga's 0-based line index."""
    entry_point: str
    program: str
    """The exact program text; its last line is the assertion that calls ``entry_point``."""
    input: str
    """The arguments of that call, comma-separated, as they appear in the assertion."""
    test_index: int
    """Which ``assert`` of the upstream test was used (0-based; 0 for CRUXEval)."""
    executable_lines: tuple[int, ...]
    covered_lines: tuple[int, ...]
    """Forward ground truth: the executed (covered) lines, sorted."""
    uncovered_lines: tuple[int, ...]
    target_line: int
    target_rule: str
    """``body`` | ``return`` | ``line`` (lines.py)."""
    target_lines: tuple[int, ...]
    """A backward answer succeeds when one of these lines is covered."""
    known_good_input: str | None
    """Another upstream test input that reaches the target (HumanEval/PythonSaga), or None."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)


_TUPLES = {"executable_lines", "covered_lines", "uncovered_lines", "target_lines"}
_INTS = {"test_index", "target_line"}
_FIELDS = tuple(f.name for f in fields(Instance))


def from_mapping(raw: Mapping[str, Any], where: str) -> Instance:
    """An Instance from a decoded line; ``where`` (``file:line``) names it in errors."""
    missing = [k for k in _FIELDS if k not in raw]
    if missing:
        raise DataError(f"{where}: missing field(s) {', '.join(missing)}")
    unknown = sorted(set(raw) - set(_FIELDS))
    if unknown:
        raise DataError(f"{where}: unknown field(s) {', '.join(unknown)}")
    for key in _FIELDS:
        value = raw[key]
        if key in _TUPLES:
            ok = isinstance(value, list) and all(type(v) is int for v in value)
            expected = "a list of line numbers"
        elif key in _INTS:
            ok, expected = type(value) is int, "an integer"
        else:
            ok = isinstance(value, str) or (key == "known_good_input" and value is None)
            expected = "a string"
        if not ok:
            raise DataError(f"{where}: {key} must be {expected}")
    if raw["source"] not in SOURCES:
        raise DataError(f"{where}: source must be one of {', '.join(SOURCES)}")
    if raw["target_rule"] not in RULES:
        raise DataError(f"{where}: target_rule must be one of {', '.join(RULES)}")
    values: dict[str, Any] = {k: tuple(raw[k]) if k in _TUPLES else raw[k] for k in _FIELDS}
    return Instance(**values)


def dumps(instances: Iterable[Instance]) -> str:
    """The instance file's text: one line per instance."""
    return "".join(i.to_json() + "\n" for i in instances)


def read_instances(path: Path) -> list[Instance]:
    out = [from_mapping(raw, f"{path}:{n}") for n, raw in read_objects(path, "instance file")]
    dupes = sorted(k for k, n in Counter(i.id for i in out).items() if n > 1)
    if dupes:
        raise DataError(f"{path}: duplicate instance id(s) {', '.join(dupes[:5])}")
    return out


def builtin_path() -> Path:
    """The packaged CRUXEval + HumanEval instance file."""
    return Path(__file__).resolve().parents[2] / "data" / "dexbench" / "instances.jsonl"


def load_builtin() -> list[Instance]:
    return read_instances(builtin_path())


def oracle_fields(instance: Instance, task: str) -> dict[str, Any]:
    """The fields a DexBench export row carries beside the ledger's, for ``grade_rows``."""
    fields: dict[str, Any] = {
        "task": task,
        "source": instance.source,
        "source_id": instance.source_id,
    }
    if task == "forward":
        fields["covered_lines"] = list(instance.covered_lines)
    else:
        fields["target_line"] = instance.target_line
        fields["target_rule"] = instance.target_rule
        fields["target_lines"] = list(instance.target_lines)
    return fields
