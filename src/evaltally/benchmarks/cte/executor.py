"""In-process execution semantics of a CTE-Bench service (the oracle).

API note (for the generator and the sandbox worker)
---------------------------------------------------
Everything here runs service code *in this process*. Call it directly only on trusted source
(the project's own services); code from a data file goes through ``sandbox.py``, whose child
process calls these same functions.

- ``load_service_class(source) -> type``: exec the source in a fresh module namespace and return
  its one top-level class.
- ``constructor_args(cls, state) -> dict``: the ``__init__`` arguments of a service. The release's
  services store each constructor argument as a same-named attribute (the rate limiter's
  ``limit`` and ``expiry`` appear in every ``final_state_*``), and no operation writes them, so a
  record's ``final_state_original`` supplies them for a replay from scratch.
- ``new_service(cls, init_args)`` / ``load_service(cls, state)``: a fresh instance / an instance
  whose attributes are overwritten by a JSON state (lists become sets where the fresh instance
  holds a set). ``load_service`` is how an edited class takes over the post-history state.
- ``get_state(svc) -> dict``: JSON-serializable deep copy of the instance's attributes
  (sets -> sorted lists, tuples -> lists); this is the ``final_state_*`` format.
- ``set_state_path(state, path, value) -> dict``: a copy of ``state`` with one value overwritten
  (``["clock"]``, ``["storage", "k2:0"]``).
- ``call(svc, op, args)`` / ``run_calls(svc, calls)``: run ``{op, args}`` calls. ``args`` values
  are passed *positionally in stored order* (the release's argument names do not always match
  the parameter names, e.g. ``token_id`` vs ``tid``). An exception inside the service becomes the
  response ``{"error": {"code": "SERVICE_EXCEPTION", "message": "KeyError: 'size'"}}`` and the
  state keeps whatever the method mutated before raising (as in the release).
  Responses are converted to plain JSON *when produced* (a deep copy); ``late_serialization=True``
  reproduces the release's quirk of serializing after the whole run.
- ``apply_edit`` / ``revert_edit``: one-span source edits at (1-based line, 0-based column).
- ``replay_record(record) -> ReplayResult``: the full oracle of one scenario record.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaltally.errors import DataError, SandboxError

JSON = Any
SOURCE_EDIT_KINDS = frozenset({"branch_inversion", "threshold_change"})
STATE_KINDS = frozenset({"clock_jump", "state_injection"})


def to_json(value: Any) -> JSON:
    """A deep copy of ``value`` made only of dict/list/str/int/float/bool/None.

    Sets become sorted lists (the release's state format, e.g. ``closed`` in the bank)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, set | frozenset):
        items = [to_json(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=repr)
    raise SandboxError(f"service produced a value that is not JSON: {type(value).__name__}")


def load_service_class(source: str, *, filename: str = "<cte-service>") -> type:
    """Execute service ``source`` in a fresh namespace and return its single top-level class."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise SandboxError(f"{filename}: service source does not parse: {exc}") from exc
    names = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    if len(names) != 1:
        raise SandboxError(f"{filename}: expected exactly one top-level class, found {names}")
    namespace: dict[str, Any] = {"__name__": "cte_service"}
    try:
        exec(compile(tree, filename, "exec"), namespace)
    except Exception as exc:
        raise SandboxError(f"{filename}: service source failed to load: {exc!r}") from exc
    cls = namespace[names[0]]
    if not isinstance(cls, type):
        raise SandboxError(f"{filename}: {names[0]} is not a class")
    return cls


def constructor_args(cls: type, state: Mapping[str, JSON]) -> dict[str, JSON]:
    """Required ``__init__`` arguments of ``cls``, read from same-named keys of ``state``."""
    init = getattr(cls, "__init__")  # noqa: B009 (mypy rejects cls.__init__)
    params = list(inspect.signature(init).parameters.values())[1:]
    args: dict[str, JSON] = {}
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in state:
            args[p.name] = to_json(state[p.name])
        elif p.default is p.empty:
            raise DataError(
                f"{cls.__name__}.__init__ needs {p.name!r}, which the state does not hold"
            )
    return args


def new_service(cls: type, init_args: Mapping[str, JSON] | None = None) -> object:
    """A fresh instance of ``cls`` constructed with ``init_args`` as keyword arguments."""
    try:
        return cls(**dict(init_args or {}))
    except Exception as exc:
        raise SandboxError(f"{cls.__name__}() failed: {exc!r}") from exc


def get_state(svc: object) -> dict[str, JSON]:
    """The JSON-serializable state of ``svc`` (a deep copy of its attributes)."""
    return {str(k): to_json(v) for k, v in vars(svc).items()}


def load_service(
    cls: type, state: Mapping[str, JSON], init_args: Mapping[str, JSON] | None = None
) -> object:
    """An instance of ``cls`` (possibly an edited class) carrying ``state``.

    The instance is constructed normally (so attributes missing from ``state`` keep their
    defaults) and each state attribute is then overwritten by a deep copy; a list is turned
    back into a set where the freshly constructed attribute is a set."""
    args = dict(init_args) if init_args is not None else constructor_args(cls, state)
    svc = new_service(cls, args)
    fresh = vars(svc)
    for key, value in state.items():
        copied = to_json(value)
        if isinstance(fresh.get(key), set | frozenset) and isinstance(copied, list):
            copied = set(copied)
        setattr(svc, key, copied)
    return svc


def set_state_path(state: Mapping[str, JSON], path: Sequence[str], value: JSON) -> dict[str, JSON]:
    """A deep copy of ``state`` with the value at ``path`` (dict keys) replaced by ``value``."""
    if not path:
        raise DataError("state path is empty")
    new: dict[str, JSON] = to_json(state)
    node: Any = new
    for key in path[:-1]:
        if not isinstance(node, dict) or key not in node:
            raise DataError(f"state path {list(path)} does not exist (at {key!r})")
        node = node[key]
    if not isinstance(node, dict):
        raise DataError(f"state path {list(path)} does not end in an object")
    node[path[-1]] = to_json(value)
    return new


def get_state_path(state: Mapping[str, JSON], path: Sequence[str]) -> JSON:
    """The value at ``path`` in ``state``, or None when a key is missing."""
    node: Any = state
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def call(svc: object, op: str, args: Mapping[str, JSON]) -> Any:
    """Run one call and return the raw response object (not copied)."""
    if not isinstance(op, str) or op.startswith("_"):
        raise DataError(f"operation {op!r} is not a public service method")
    method = getattr(svc, op, None)
    if not callable(method):
        raise DataError(f"service {type(svc).__name__} has no operation {op!r}")
    try:
        return method(*args.values())
    except Exception as exc:  # a service bug is an observable response, as in the release
        return {"error": {"code": "SERVICE_EXCEPTION", "message": f"{type(exc).__name__}: {exc}"}}


def run_calls(
    svc: object, calls: Iterable[Mapping[str, Any]], *, late_serialization: bool = False
) -> list[JSON]:
    """Run ``{op, args}`` calls in order and return their JSON responses.

    Each response is deep-copied when produced. ``late_serialization=True`` instead keeps the
    raw objects and converts them after the last call (the release's quirk in 9 cart records)."""
    raw: list[Any] = []
    for c in calls:
        response = call(svc, c["op"], c["args"])
        raw.append(response if late_serialization else to_json(response))
    return [to_json(r) for r in raw] if late_serialization else raw


def apply_edit(source: str, line_number: int, col_offset: int, old_span: str, new_span: str) -> str:
    """Replace ``old_span`` at (1-based ``line_number``, 0-based ``col_offset``) by ``new_span``."""
    lines = source.split("\n")
    if not 1 <= line_number <= len(lines):
        raise DataError(f"edit line {line_number} is outside the source ({len(lines)} lines)")
    line = lines[line_number - 1]
    if line[col_offset : col_offset + len(old_span)] != old_span:
        raise DataError(
            f"source line {line_number} does not hold {old_span!r} at column {col_offset}: "
            f"{line.strip()!r}"
        )
    lines[line_number - 1] = line[:col_offset] + new_span + line[col_offset + len(old_span) :]
    return "\n".join(lines)


def revert_edit(patched_source: str, intervention: Mapping[str, Any]) -> str:
    """The unedited source: ``patched_source`` with ``modified_span`` put back to the original."""
    return apply_edit(
        patched_source,
        int(intervention["line_number"]),
        int(intervention["col_offset"]),
        str(intervention["modified_span"]),
        str(intervention["original_span"]),
    )


@dataclass(frozen=True)
class ReplayResult:
    """Everything the oracle produces for one scenario (all plain JSON)."""

    item_id: str
    prefix: list[JSON]
    original: list[JSON]
    counterfactual: list[JSON]
    final_state_original: dict[str, JSON]
    final_state_cf: dict[str, JSON]
    post_history_state: dict[str, JSON]
    #: for state interventions: the value found at ``path`` after the history (vs from_value)
    found_from_value: JSON = None
    late_serialization: bool = False
    notes: list[str] = field(default_factory=list)


def original_source(
    record: Mapping[str, Any], unedited_sources: Mapping[str, str] | None = None
) -> str:
    """The unedited service source of ``record`` (see ``replay_record``)."""
    iv = record["intervention"]
    if iv["kind"] in SOURCE_EDIT_KINDS:
        return revert_edit(str(record["patched_source"]), iv)
    domain = str(record["domain"])
    if unedited_sources is None or domain not in unedited_sources:
        raise DataError(
            f"record {record.get('item_id')}: state intervention on {domain!r} needs the "
            f"unedited {domain} source (from a source-edit record of the same domain)"
        )
    return unedited_sources[domain]


def unedited_sources_from(records: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Domain -> unedited source, recovered from the first source-edit record of each domain."""
    out: dict[str, str] = {}
    for r in records:
        iv = r.get("intervention") or {}
        if iv.get("kind") in SOURCE_EDIT_KINDS and r.get("domain") not in out:
            out[str(r["domain"])] = revert_edit(str(r["patched_source"]), iv)
    return out


def replay_record(
    record: Mapping[str, Any],
    *,
    unedited_sources: Mapping[str, str] | None = None,
    late_serialization: bool = False,
) -> ReplayResult:
    """Run the full oracle of one scenario record.

    1. original source = ``patched_source`` with the span reverted (source edits) or the unedited
       source of the domain from ``unedited_sources`` (state interventions);
    2. construct it (constructor args from ``final_state_original``) and run ``trace_prefix``;
    3. from the post-history state: the no-intervention future on the original class, and the
       intervention future on the edited class loaded from that state (source edit) or on the
       original class loaded from the overwritten state (state intervention).
    ``late_serialization`` applies the release's quirk to the counterfactual future only."""
    iv = record["intervention"]
    kind = iv["kind"]
    orig_cls = load_service_class(original_source(record, unedited_sources))
    init_args = constructor_args(orig_cls, record["final_state_original"])
    svc = new_service(orig_cls, init_args)
    prefix = run_calls(svc, record["trace_prefix"])
    post = get_state(svc)

    future = [{"op": c["op"], "args": c["args"]} for c in record["trace_original"]]
    cf_calls = [{"op": c["op"], "args": c["args"]} for c in record["trace_counterfactual"]]

    base = load_service(orig_cls, post, init_args)
    original = run_calls(base, future)
    found: JSON = None
    if kind in SOURCE_EDIT_KINDS:
        edited_cls = load_service_class(str(record["patched_source"]))
        cf_svc = load_service(edited_cls, post, init_args)
    elif kind in STATE_KINDS:
        path = [str(p) for p in iv["path"]]
        found = get_state_path(post, path)
        cf_svc = load_service(orig_cls, set_state_path(post, path, iv["to_value"]), init_args)
    else:
        raise DataError(f"record {record.get('item_id')}: unknown intervention kind {kind!r}")
    counterfactual = run_calls(cf_svc, cf_calls, late_serialization=late_serialization)
    return ReplayResult(
        item_id=str(record.get("item_id")),
        prefix=prefix,
        original=original,
        counterfactual=counterfactual,
        final_state_original=get_state(base),
        final_state_cf=get_state(cf_svc),
        post_history_state=post,
        found_from_value=found,
        late_serialization=late_serialization,
    )
