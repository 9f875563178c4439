"""Intervention candidates and invariant checks for the fresh-scenario generator.

A source intervention is a one-token edit of a service's source: a *branch inversion* replaces a
comparison operator by its negation, a *threshold change* moves an integer threshold by one.
Candidates are found from the token stream (so the edit is exactly one token, at the line and
column a record stores) and filtered through the AST (so only thresholds qualify: operands of a
comparison or named module constants, not loop steps or id counters).

The invariant checks fill ``final_violations_cf``: each service's own consistency rules, checked
with the *unedited* constants, so an edit that lets the state break a rule of the shipped
service shows up there.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import random
import tokenize
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from evaltally.benchmarks.cte import executor as ex
from evaltally.benchmarks.cte.records import SCORED_CALLS
from evaltally.benchmarks.cte.services import service_source

BRANCH_INVERSION = "branch_inversion"
THRESHOLD_CHANGE = "threshold_change"
CLOCK_JUMP = "clock_jump"
STATE_INJECTION = "state_injection"

#: A comparison and its logical negation (the release flips comparators the same way).
INVERTED: dict[str, str] = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


@dataclass(frozen=True)
class SourceEdit:
    """One token of a service source replaced by another, at a 1-based line, 0-based column."""

    kind: str
    line_number: int
    col_offset: int
    original_span: str
    modified_span: str

    @property
    def description(self) -> str:
        if self.kind == BRANCH_INVERSION:
            return (
                f"comparator on line {self.line_number} inverted from "
                f"`{self.original_span}` to `{self.modified_span}`"
            )
        # The release writes "lowered" for every change; we say which way the value moved.
        direction = "raised" if int(self.modified_span) > int(self.original_span) else "lowered"
        return (
            f"numeric threshold on line {self.line_number} {direction} from "
            f"{self.original_span} to {self.modified_span}"
        )

    def intervention(self) -> dict[str, Any]:
        """The record's ``intervention`` object (key order as in the official file)."""
        return {
            "kind": self.kind,
            "line_number": self.line_number,
            "col_offset": self.col_offset,
            "original_span": self.original_span,
            "modified_span": self.modified_span,
            "description": self.description,
        }

    def explanation_truth(self) -> dict[str, Any]:
        return {
            "line_number": self.line_number,
            "original_span": self.original_span,
            "modified_span": self.modified_span,
        }

    def apply(self, source: str) -> str:
        """``source`` with this edit made; raises ValueError if the span is not where it says."""
        lines = source.split("\n")
        line = lines[self.line_number - 1]
        end = self.col_offset + len(self.original_span)
        if line[self.col_offset : end] != self.original_span:
            raise ValueError(f"line {self.line_number} has no {self.original_span!r} there")
        lines[self.line_number - 1] = line[: self.col_offset] + self.modified_span + line[end:]
        return "\n".join(lines)


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(source).readline))


def _threshold_positions(source: str) -> set[tuple[int, int]]:
    """(line, column) of integer literals that act as thresholds.

    These are operands of a comparison (``ttl < 1``) and values of module-level constants
    (``MAX_SESSIONS = 3``). Literals elsewhere (``self.next_id += 1``, constructor defaults
    that the state overrides anyway) are bookkeeping, not rules, so they are not candidates."""
    tree = ast.parse(source)
    found: set[tuple[int, int]] = set()

    def add(node: ast.expr) -> None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            found.add((node.lineno, node.col_offset))

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                add(operand)
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            add(stmt.value)
    return found


def source_edit_candidates(source: str, kind: str) -> list[SourceEdit]:
    """Every one-token edit of ``kind`` that the generator may try on ``source``, in source order.

    Threshold changes move a literal n to n - 1 and n + 1; n - 1 is skipped at 0 because "-1"
    would be two tokens. Whether an edit has any effect is decided later, by running it."""
    edits: list[SourceEdit] = []
    if kind == BRANCH_INVERSION:
        for tok in _tokens(source):
            if tok.type == tokenize.OP and tok.string in INVERTED:
                row, col = tok.start
                edits.append(SourceEdit(kind, row, col, tok.string, INVERTED[tok.string]))
    elif kind == THRESHOLD_CHANGE:
        positions = _threshold_positions(source)
        for tok in _tokens(source):
            if tok.type == tokenize.NUMBER and tok.start in positions:
                row, col = tok.start
                value = int(tok.string)
                for new in (value - 1, value + 1):
                    if new >= 0:
                        edits.append(SourceEdit(kind, row, col, tok.string, str(new)))
    else:
        raise ValueError(f"{kind!r} is not a source intervention kind")
    return edits


def token_difference(before: str, after: str) -> list[tuple[str, str]]:
    """The (before, after) token strings that differ between two sources of equal token count.

    A valid one-token edit gives exactly one pair. Raises ValueError when the token counts
    differ (the edit split or merged tokens)."""
    a = [(t.type, t.string) for t in _tokens(before)]
    b = [(t.type, t.string) for t in _tokens(after)]
    if len(a) != len(b):
        raise ValueError(f"token count changed from {len(a)} to {len(b)}")
    return [(x[1], y[1]) for x, y in zip(a, b, strict=True) if x != y]


# ---------------------------------------------------------------------------------------------
# Invariants, per domain, with the constants of the shipped (unedited) services.


def _auth(state: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    clock = state["clock"]
    for user_id, user in state["users"].items():
        if user["failures"] >= 3:
            out.append(f"INV_FAILURES:{user_id}={user['failures']}")
        live = [t for t, i in state["tokens"].items() if i["user_id"] == user_id]
        live = [t for t in live if clock < state["tokens"][t]["expires_at"]]
        if len(live) > 3:
            out.append(f"INV_SESSIONS:{user_id}={len(live)}")
    for token, info in state["tokens"].items():
        if info["expires_at"] - clock > 20:
            out.append(f"INV_TTL:{token}:expires_at={info['expires_at']}>clock+20")
    return out


def _bank(state: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for account_id, acct in state["accounts"].items():
        floor = 0 if acct["kind"] == "savings" else -100
        if acct["balance"] < floor:
            out.append(f"INV_BALANCE:{account_id}={acct['balance']}<{floor}")
        if acct["kind"] == "savings" and acct["withdrawals"] > 3:
            out.append(f"INV_WITHDRAWALS:{account_id}={acct['withdrawals']}")
        posted = sum(e["delta"] for e in state["entries"] if e["account_id"] == account_id)
        if posted != acct["balance"]:
            out.append(f"INV_LEDGER:{account_id}:entries={posted}!=balance={acct['balance']}")
    return out


def _cart(state: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for user_id, lines in state["carts"].items():
        if len(lines) > 4:
            out.append(f"INV_LINES:{user_id}={len(lines)}")
        for product, qty in lines.items():
            if not 1 <= qty <= 5:
                out.append(f"INV_QTY:{user_id}:{product}={qty}")
    return out


def _filesystem(state: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    nodes = state["nodes"]
    total = sum(n["size"] for n in nodes.values() if n["kind"] == "file")
    if total != state["used"]:
        out.append(f"INV_USED:sizes={total}!=used={state['used']}")
    if state["used"] > 1000:
        out.append(f"INV_QUOTA:used={state['used']}>1000")
    for path in nodes:
        if path == "/":
            continue
        parent = path.rsplit("/", 1)[0] or "/"
        if parent not in nodes or nodes[parent]["kind"] != "dir":
            out.append(f"INV_ORPHAN:{path}")
        if path.count("/") > 3:
            out.append(f"INV_DEPTH:{path}")
    return out


def _ratelimiter(state: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key, spent in state["counters"].items():
        if not 0 < spent <= state["limit"]:
            out.append(f"INV_COUNTER:{key}={spent}")
    return out


def _reservation(state: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    active = [b for b in state["bookings"].values() if b["status"] in ("held", "confirmed")]
    for slot_id, slot in state["slots"].items():
        held = sum(b["seats"] for b in active if b["slot_id"] == slot_id)
        if held != slot["taken"] or not 0 <= slot["taken"] <= slot["capacity"]:
            out.append(
                f"INV_SEATS:{slot_id}:active={held}:taken={slot['taken']}:cap={slot['capacity']}"
            )
    for user_id in sorted({b["user_id"] for b in active}):
        seats = sum(b["seats"] for b in active if b["user_id"] == user_id)
        if seats > 4:
            out.append(f"INV_QUOTA:{user_id}={seats}")
    return out


_INVARIANTS: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "auth": _auth,
    "bank": _bank,
    "cart": _cart,
    "filesystem": _filesystem,
    "ratelimiter": _ratelimiter,
    "reservation": _reservation,
}


def invariant_violations(domain: str, state: Mapping[str, Any]) -> list[str]:
    """Rules of ``domain``'s shipped service that ``state`` breaks (empty when consistent)."""
    return _INVARIANTS[domain](state)


# ---------------------------------------------------------------------------------------------
# Trying an intervention on a reference run, and building the record when it is admitted.

Call = dict[str, Any]
#: Chooses the next call from the reference run's current state.
Workload = Callable[[random.Random, dict[str, Any]], tuple[str, dict[str, Any]]]
#: Top-level key order of a record, as in the official file.
RECORD_KEYS: Final = (
    "domain",
    "item_id",
    "intervention",
    "explanation_truth",
    "prefix_len",
    "trace_prefix",
    "trace_original",
    "trace_counterfactual",
    "patched_source",
    "reachability",
    "final_state_cf",
    "final_state_original",
    "final_violations_cf",
    "expected_delay",
)


def _canonical(value: Any) -> str:
    # Strict JSON equality: key order ignored, but True != 1 and 1 != 1.0 (as value match is).
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _differs(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return any(_canonical(x) != _canonical(y) for x, y in zip(a, b, strict=True))


def _wanted(cf: Sequence[Any], reference: Sequence[Any], *, effect: bool) -> bool:
    """A main-set scenario needs some changed response anywhere in its stored trace; a
    no-effect probe needs none in the scored window (a change after it is never scored, and
    several cells, e.g. every rate-limiter branch inversion, always change something later).
    Neither may contain a response where the edited service raised."""
    if _raised(cf):
        return False
    if effect:
        return _differs(cf, reference)
    return not _differs(cf[:SCORED_CALLS], reference[:SCORED_CALLS])


def _raised(responses: Sequence[Any]) -> bool:
    return any(
        isinstance(r, dict)
        and isinstance(r.get("error"), dict)
        and r["error"].get("code") == "SERVICE_EXCEPTION"
        for r in responses
    )


@dataclass
class Reference:
    """The unedited service run over one workload."""

    calls: list[Call]  # {op, args}
    responses: list[Any]
    states: list[dict[str, Any]]  # state after each call


class ServiceRunner:
    """One service: its source, class, constructor args and loaded edited classes (cached)."""

    def __init__(self, domain: str) -> None:
        self.domain = domain
        self.source = service_source(domain)
        self.cls = ex.load_service_class(self.source, filename=f"{domain}.py")
        # Our services construct without arguments; their defaults land in the state, which is
        # where replay_record reads constructor arguments from.
        self.init_args = ex.constructor_args(self.cls, ex.get_state(ex.new_service(self.cls)))
        self._edited: dict[SourceEdit, type] = {}

    def edited_class(self, edit: SourceEdit) -> type:
        if edit not in self._edited:
            self._edited[edit] = ex.load_service_class(edit.apply(self.source))
        return self._edited[edit]

    def reference(self, rng: random.Random, pick: Workload, n_calls: int) -> Reference:
        """Run ``n_calls`` calls chosen by ``pick`` from the current state on the unedited
        service."""
        svc = ex.new_service(self.cls, self.init_args)
        state = ex.get_state(svc)
        ref = Reference([], [], [])
        for _ in range(n_calls):
            op, args = pick(rng, state)
            call = {"op": op, "args": args}
            ref.calls.append(call)
            ref.responses.append(ex.run_calls(svc, [call])[0])
            state = ex.get_state(svc)
            ref.states.append(state)
        if _raised(ref.responses):
            raise RuntimeError(f"{self.domain}: the unedited service raised on its workload")
        return ref

    def future(self, cls: type, state: dict[str, Any], calls: list[Call]) -> tuple[Any, Any]:
        """Responses and final state of ``calls`` on ``cls`` loaded from ``state``."""
        svc = ex.load_service(cls, state, self.init_args)
        return ex.run_calls(svc, calls), ex.get_state(svc)


def _trace(calls: Sequence[Call], responses: Sequence[Any]) -> list[dict[str, Any]]:
    return [
        {"op": c["op"], "args": c["args"], "response": r}
        for c, r in zip(calls, responses, strict=True)
    ]


def _record(
    dom: ServiceRunner,
    ref: Reference,
    prefix_len: int,
    intervention: dict[str, Any],
    truth: dict[str, Any],
    patched_source: str | None,
    reachability: dict[str, Any],
    cf: tuple[Any, Any],
) -> dict[str, Any]:
    post = ref.states[prefix_len - 1]
    future = ref.calls[prefix_len:]
    original = dom.future(dom.cls, post, future)
    if _canonical(original[0]) != _canonical(ref.responses[prefix_len:]):
        raise RuntimeError(f"{dom.domain}: loading the post-history state changed the replay")
    core = [dom.domain, intervention, prefix_len, ref.calls]
    item_id = hashlib.sha256(_canonical(core).encode()).hexdigest()[:12]
    record = {
        "domain": dom.domain,
        "item_id": item_id,
        "intervention": intervention,
        "explanation_truth": truth,
        "prefix_len": prefix_len,
        "trace_prefix": _trace(ref.calls[:prefix_len], ref.responses[:prefix_len]),
        "trace_original": _trace(future, original[0]),
        "trace_counterfactual": _trace(future, cf[0]),
        "patched_source": patched_source,
        "reachability": reachability,
        "final_state_cf": cf[1],
        "final_state_original": original[1],
        "final_violations_cf": invariant_violations(dom.domain, cf[1]),
        "expected_delay": None,
    }
    return {key: record[key] for key in RECORD_KEYS}


def try_source_edit(
    dom: ServiceRunner, ref: Reference, prefix_len: int, edit: SourceEdit, *, effect: bool = True
) -> dict[str, Any] | None:
    post = ref.states[prefix_len - 1]
    future = ref.calls[prefix_len:]
    edited = dom.edited_class(edit)
    cf = dom.future(edited, post, future)
    if not _wanted(cf[0], ref.responses[prefix_len:], effect=effect):
        return None
    # Admission: the edited service loads the post-history state and replays deterministically.
    if _canonical(dom.future(edited, post, future)) != _canonical(cf):
        return None
    reach = {"accepted": True, "reason": "CODE_INTERVENTION"}
    patched = edit.apply(dom.source)
    return _record(
        dom, ref, prefix_len, edit.intervention(), edit.explanation_truth(), patched, reach, cf
    )


def _observed(ref: Reference, path: Sequence[str]) -> list[Any]:
    """Distinct values ``path`` takes over the whole reference run, in a fixed order."""
    values = {ex.get_state_path(s, path) for s in ref.states}
    return sorted(v for v in values if isinstance(v, int) and not isinstance(v, bool))


def try_state_intervention(
    dom: ServiceRunner,
    ref: Reference,
    prefix_len: int,
    kind: str,
    rng: random.Random,
    *,
    effect: bool = True,
) -> dict[str, Any] | None:
    post = ref.states[prefix_len - 1]
    if kind == CLOCK_JUMP:
        path = ["clock"]
    else:
        # A counter overwrite targets a counter that exists right after the history.
        keys = sorted(post["counters"])
        if not keys:
            return None
        path = ["counters", rng.choice(keys)]
    from_value = ex.get_state_path(post, path)
    observed = _observed(ref, path)
    # The new value is one the reference run itself reaches (the release's admission rule
    # OBSERVED_ELSEWHERE_IN_REFERENCE); clock jumps may go backward.
    choices = [v for v in observed if v != from_value]
    if not choices:
        return None
    to_value = rng.choice(choices)
    future = ref.calls[prefix_len:]
    changed = ex.set_state_path(post, path, to_value)
    cf = dom.future(dom.cls, changed, future)
    if not _wanted(cf[0], ref.responses[prefix_len:], effect=effect):
        return None
    if _canonical(dom.future(dom.cls, changed, future)) != _canonical(cf):
        return None
    where = ".".join(path)
    intervention = {
        "kind": kind,
        "path": path,
        "from_value": from_value,
        "to_value": to_value,
        "description": f"state[{where}] {from_value} -> {to_value} at step {prefix_len - 1}",
    }
    truth = {"path": path, "from_value": from_value, "to_value": to_value}
    reach = {
        "accepted": True,
        "reason": "OBSERVED_ELSEWHERE_IN_REFERENCE",
        "detail": {"observed_count": len(observed)},
    }
    return _record(dom, ref, prefix_len, intervention, truth, None, reach, cf)
