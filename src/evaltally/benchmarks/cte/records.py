"""CTE-Bench scenario records: strict reading of Core-v1-format JSONL (optionally gzipped).

Every problem is a ``DataError`` naming the file, the 1-based line, the record's ``item_id``
(when readable) and the field, e.g. ``core.jsonl:12: item 3f..: trace_original[4].args: ...``.

Encodings accepted (the official file was checked): each trace is a JSON array of
``{op, args, response}`` objects; a trace stored as a *string* holding a Python-literal list
(single quotes, as some exports of the release do) is parsed with ``ast.literal_eval`` — never
``eval``. Responses and args must be JSON objects; state fields are JSON objects.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evaltally.errors import DataError
from evaltally.jsonl import Where, read_records

from .executor import SOURCE_EDIT_KINDS, STATE_KINDS, revert_edit

#: Only the first 40 future calls of a scenario are scored (paper; 255 x 40 = 10,200 calls).
SCORED_CALLS = 40

REQUIRED_FIELDS = (
    "domain",
    "item_id",
    "intervention",
    "prefix_len",
    "trace_prefix",
    "trace_original",
    "trace_counterfactual",
    "patched_source",
    "final_state_original",
    "final_state_cf",
)


def is_error(response: Any) -> bool:
    """Status of a response: an error is a dict with an ``error`` key (codes not compared)."""
    return isinstance(response, dict) and "error" in response


def json_equal(a: Any, b: Any) -> bool:
    """Equality of decoded JSON: key order ignored, ``True != 1``, ``1 == 1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b):
        return False
    return bool(a == b)


@dataclass(frozen=True)
class Call:
    """One service call with its response."""

    op: str
    args: dict[str, Any]
    response: dict[str, Any]


@dataclass(frozen=True)
class Intervention:
    """A source edit (line/col/spans) or a state overwrite (path/from/to)."""

    kind: str
    description: str
    line_number: int | None = None
    col_offset: int | None = None
    original_span: str | None = None
    modified_span: str | None = None
    path: tuple[str, ...] | None = None
    from_value: Any = None
    to_value: Any = None

    @property
    def is_source_edit(self) -> bool:
        return self.kind in SOURCE_EDIT_KINDS


@dataclass(frozen=True)
class Scenario:
    """One CTE-Bench scenario. ``raw`` is the record as read (for the sandboxed oracle)."""

    item_id: str
    domain: str
    intervention: Intervention
    prefix: tuple[Call, ...]
    original: tuple[Call, ...]
    counterfactual: tuple[Call, ...]
    patched_source: str | None
    original_source: str | None
    final_state_original: dict[str, Any]
    final_state_cf: dict[str, Any]
    source_file: str = ""
    line: int = 0
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def kind(self) -> str:
        return self.intervention.kind

    @property
    def shown_source(self) -> str:
        """The source shown to a model: patched for edits, the unedited one for state changes."""
        src = self.patched_source if self.intervention.is_source_edit else self.original_source
        if not src:
            raise DataError(f"{self.source_file}:{self.line}: item {self.item_id}: no source")
        return src

    @property
    def scored(self) -> tuple[Call, ...]:
        """The scored future calls (targets): the first ``SCORED_CALLS`` counterfactual calls."""
        return self.counterfactual[:SCORED_CALLS]

    def differs(self, index: int) -> bool:
        """Whether future call ``index`` responds differently with and without intervention."""
        return not json_equal(self.counterfactual[index].response, self.original[index].response)

    def effect_steps(self) -> list[int]:
        """Indices (< SCORED_CALLS) where the two futures' responses differ."""
        return [i for i in range(min(SCORED_CALLS, len(self.counterfactual))) if self.differs(i)]

    def first_change(self) -> int | None:
        """0-based index of the first differing response in the whole stored trace."""
        return next((i for i in range(len(self.counterfactual)) if self.differs(i)), None)

    def is_late(self) -> bool:
        """True when the first change comes after the scored window."""
        first = self.first_change()
        return first is not None and first >= SCORED_CALLS


def _require(rec: Mapping[str, Any], key: str, types: type | tuple[type, ...], w: Where) -> Any:
    if key not in rec:
        raise w.error(key, "missing")
    value = rec[key]
    # bool is an int subclass; a count given as true/false is a type error
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _tuple(types)):
        raise w.error(key, f"expected {_names(types)}, got {type(value).__name__}")
    return value


def _tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _names(types: type | tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in _tuple(types))


def _trace(rec: Mapping[str, Any], key: str, w: Where) -> tuple[Call, ...]:
    value = _require(rec, key, (list, str), w)
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            raise w.error(key, f"string is not a Python-literal list: {exc}") from None
        if not isinstance(value, list):
            raise w.error(key, f"expected a list, got {type(value).__name__}")
    calls = []
    for i, c in enumerate(value):
        where = f"{key}[{i}]"
        if not isinstance(c, dict):
            raise w.error(where, f"expected an object, got {type(c).__name__}")
        op = _require(c, "op", str, w.sub(where))
        args = _require(c, "args", dict, w.sub(where))
        resp = _require(c, "response", dict, w.sub(where))
        calls.append(Call(op=op, args=args, response=resp))
    return tuple(calls)


def _intervention(rec: Mapping[str, Any], w: Where) -> Intervention:
    iv = _require(rec, "intervention", dict, w)
    iw = w.sub("intervention")
    kind = _require(iv, "kind", str, iw)
    desc = iv.get("description", "")
    if not isinstance(desc, str):
        raise iw.error("description", "expected str")
    if kind in SOURCE_EDIT_KINDS:
        return Intervention(
            kind=kind,
            description=desc,
            line_number=_require(iv, "line_number", int, iw),
            col_offset=_require(iv, "col_offset", int, iw),
            original_span=_require(iv, "original_span", str, iw),
            modified_span=_require(iv, "modified_span", str, iw),
        )
    if kind in STATE_KINDS:
        path = _require(iv, "path", list, iw)
        if not path or not all(isinstance(p, str) for p in path):
            raise iw.error("path", "expected a non-empty list of strings")
        for key in ("from_value", "to_value"):
            if key not in iv:
                raise iw.error(key, "missing")
        return Intervention(
            kind=kind,
            description=desc,
            path=tuple(path),
            from_value=iv["from_value"],
            to_value=iv["to_value"],
        )
    raise iw.error("kind", f"unknown intervention kind {kind!r}")


def parse_record(rec: Any, path: Path, line: int) -> Scenario:
    """Validate one decoded record (see the module docstring for the rules)."""
    if not isinstance(rec, dict):
        raise DataError(f"{path}:{line}: record is not a JSON object")
    raw_id = rec.get("item_id")
    w = Where(path, line, raw_id if isinstance(raw_id, str) else None)
    item_id = _require(rec, "item_id", str, w)
    if not item_id:
        raise w.error("item_id", "empty")
    domain = _require(rec, "domain", str, w)
    iv = _intervention(rec, w)
    prefix_len = _require(rec, "prefix_len", int, w)
    prefix = _trace(rec, "trace_prefix", w)
    original = _trace(rec, "trace_original", w)
    cf = _trace(rec, "trace_counterfactual", w)
    patched = _require(rec, "patched_source", (str, type(None)), w)
    fso = _require(rec, "final_state_original", dict, w)
    fscf = _require(rec, "final_state_cf", dict, w)
    for key, types in (("explanation_truth", dict), ("reachability", dict)):
        if key in rec and rec[key] is not None:
            _require(rec, key, types, w)
    if "final_violations_cf" in rec:
        _require(rec, "final_violations_cf", list, w)
    if prefix_len != len(prefix):
        raise w.error("prefix_len", f"{prefix_len} != len(trace_prefix) {len(prefix)}")
    if len(original) != len(cf):
        raise w.error("trace_counterfactual", f"{len(cf)} calls vs {len(original)} original")
    if len(cf) < SCORED_CALLS:
        raise w.error("trace_counterfactual", f"{len(cf)} calls, need >= {SCORED_CALLS}")
    for i, (a, b) in enumerate(zip(original, cf, strict=True)):
        if a.op != b.op or not json_equal(a.args, b.args):
            raise w.error(f"trace_counterfactual[{i}]", "call differs from trace_original")
    original_source: str | None = None
    if iv.is_source_edit:
        if not patched:
            raise w.error("patched_source", "empty for a source edit")
        try:
            original_source = revert_edit(patched, rec["intervention"])
        except DataError as exc:
            raise w.error("intervention", str(exc)) from None
    return Scenario(
        item_id=item_id,
        domain=domain,
        intervention=iv,
        prefix=prefix,
        original=original,
        counterfactual=cf,
        patched_source=patched or None,
        original_source=original_source,
        final_state_original=fso,
        final_state_cf=fscf,
        source_file=str(path),
        line=line,
        raw=rec,
    )


def load_scenarios(
    path: str | Path, *, unedited_sources: Mapping[str, str] | None = None
) -> list[Scenario]:
    """Read and strictly validate every scenario of a ``.jsonl`` or ``.jsonl.gz`` file.

    State-intervention records get their unedited source from ``unedited_sources`` or else from
    a source-edit record of the same domain in the file (as the release intends)."""
    out = read_records(
        Path(path), parse_record, lambda sc: sc.item_id,
        what="scenario file", noun="scenario", id_field="item_id",
    )  # fmt: skip
    sources = dict(unedited_sources or {})
    for sc in out:
        if sc.original_source and sc.domain not in sources:
            sources[sc.domain] = sc.original_source
    return [
        sc if sc.original_source else replace(sc, original_source=sources.get(sc.domain))
        for sc in out
    ]


def unedited_sources(scenarios: list[Scenario]) -> dict[str, str]:
    """Domain -> unedited source over the scenarios that know it."""
    return {s.domain: s.original_source for s in scenarios if s.original_source}
