"""Seeded generator of fresh CTE scenarios with Core-v1's design and composition.

A published benchmark leaks into training data; this module makes new scenario sets of the same
design from our own six services (``services/``). One scenario:

1. a plausible random workload of 100 calls, chosen call by call from the state of the
   unedited service (so ids, tokens and paths mostly exist), run as the *reference*;
2. the first ``prefix_len`` calls are the observed history (``trace_prefix``);
3. an intervention right after the history: a one-token source edit whose class takes over the
   post-history state, or an overwrite of one state value (clock jump, rate-limit counter);
4. the remaining calls run from the post-history state twice, without and with the
   intervention (``trace_original``, ``trace_counterfactual``); a candidate is kept only if some
   response differs, the intervention run raises nothing, and it replays identically.

The no-effect probe (``generate(seed, probe="no-effect")``) is built the same way from the same
services, keeping instead the candidates whose intervention changes no response in the scored
window (the first 40 future calls): replay without the intervention scores 100% there, and a
model's misses measure invented changes.

All execution goes through ``executor.py`` (the same functions ``replay_record`` uses), so a
generated record replays exactly. Randomness comes only from ``random.Random(seed)``.
"""

from __future__ import annotations

import gzip
import io
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from evaltally.benchmarks.cte.interventions import (
    BRANCH_INVERSION,
    CLOCK_JUMP,
    RECORD_KEYS,
    STATE_INJECTION,
    THRESHOLD_CHANGE,
    ServiceRunner,
    Workload,
    source_edit_candidates,
    try_source_edit,
    try_state_intervention,
)

__all__ = [
    "BUILTIN_SEED",
    "COMPOSITION",
    "NO_EFFECT_COMPOSITION",
    "PROBES",
    "RECORD_KEYS",
    "builtin_path",
    "dumps_jsonl",
    "generate",
    "gzip_bytes",
    "write_generated",
]

#: Seed of the set shipped as ``evaltally/data/cte_builtin.jsonl.gz``.
BUILTIN_SEED: Final[int] = 20260101

#: (domain, intervention kind, scenarios): Core-v1's composition, 255 scenarios in file order.
COMPOSITION: Final[tuple[tuple[str, str, int], ...]] = (
    ("auth", THRESHOLD_CHANGE, 30),
    ("bank", BRANCH_INVERSION, 30),
    ("cart", BRANCH_INVERSION, 30),
    ("filesystem", BRANCH_INVERSION, 30),
    ("ratelimiter", BRANCH_INVERSION, 30),
    ("ratelimiter", THRESHOLD_CHANGE, 30),
    ("ratelimiter", CLOCK_JUMP, 30),
    ("ratelimiter", STATE_INJECTION, 15),
    ("reservation", BRANCH_INVERSION, 30),
)
#: The no-effect probe: 106 scenarios as in the paper (which does not publish its probe's
#: composition; this one is ours). Every cell of the main set except clock jumps: a rate-limiter
#: clock jump to a value its reference run reaches always changes a response within 40 calls.
NO_EFFECT_COMPOSITION: Final[tuple[tuple[str, str, int], ...]] = (
    ("auth", THRESHOLD_CHANGE, 14),
    ("bank", BRANCH_INVERSION, 14),
    ("cart", BRANCH_INVERSION, 14),
    ("filesystem", BRANCH_INVERSION, 14),
    ("ratelimiter", BRANCH_INVERSION, 12),
    ("ratelimiter", THRESHOLD_CHANGE, 12),
    ("ratelimiter", STATE_INJECTION, 12),
    ("reservation", BRANCH_INVERSION, 14),
)
#: ``--probe`` name -> (composition, whether the intervention must change some response).
PROBES: Final[dict[str | None, tuple[tuple[tuple[str, str, int], ...], bool]]] = {
    None: (COMPOSITION, True),
    "no-effect": (NO_EFFECT_COMPOSITION, False),
}
TOTAL_CALLS: Final = 100
PREFIX_LENGTHS: Final = (5, 15, 35, 55)
#: Workloads tried per source-edit candidate before the next candidate gets its turn.
_TRIES_PER_CANDIDATE: Final = 4
#: Give up (a bug in a service or workload, never expected) after this many tries per scenario.
_MAX_TRIES: Final = 400


def builtin_path() -> Path:
    """The shipped default generated set (reproducible from ``BUILTIN_SEED``)."""
    return Path(__file__).resolve().parents[2] / "data" / "cte_builtin.jsonl.gz"


def _cell(
    dom: ServiceRunner, kind: str, count: int, rng: random.Random, *, effect: bool
) -> list[dict[str, Any]]:
    """``count`` scenarios of one (domain, kind) cell."""
    # Prefix lengths are balanced over the cell. A state intervention lands after call
    # ``prefix_len`` of the history, which the official file records as prefix_len + 1
    # ("at step 5" with 6 observed calls); we keep that convention.
    lengths = [PREFIX_LENGTHS[i % len(PREFIX_LENGTHS)] for i in range(count)]
    rng.shuffle(lengths)
    is_edit = kind in (BRANCH_INVERSION, THRESHOLD_CHANGE)
    rotation = source_edit_candidates(dom.source, kind) if is_edit else []
    rng.shuffle(rotation)
    turn = 0
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for base in lengths:
        prefix_len = base if is_edit else base + 1
        record = None
        for tries in range(_MAX_TRIES):
            ref = dom.reference(rng, WORKLOADS[dom.domain], TOTAL_CALLS)
            if is_edit:
                # Candidates take turns, so the effective edits share the cell evenly.
                edit = rotation[turn % len(rotation)]
                record = try_source_edit(dom, ref, prefix_len, edit, effect=effect)
                if record is None and (tries + 1) % _TRIES_PER_CANDIDATE == 0:
                    turn += 1
            else:
                record = try_state_intervention(dom, ref, prefix_len, kind, rng, effect=effect)
            if record is not None and record["item_id"] not in seen:
                break
            record = None
        if record is None:
            wanted = "effective" if effect else "no-effect"
            raise RuntimeError(f"no {wanted} {kind} scenario for {dom.domain} found")
        turn += 1
        seen.add(record["item_id"])
        out.append(record)
    return out


def generate(seed: int, probe: str | None = None) -> list[dict[str, Any]]:
    """A fresh scenario set, fully determined by seed: Core-v1's composition (255 records), or
    with ``probe="no-effect"`` the no-effect probe (106 records)."""
    if probe not in PROBES:
        raise ValueError(f"unknown probe {probe!r}; valid: {', '.join(p for p in PROBES if p)}")
    composition, effect = PROBES[probe]
    master = random.Random(seed)
    # Each cell gets its own stream, so changing one cell's logic leaves the others unchanged.
    cell_seeds = [master.getrandbits(64) for _ in composition]
    domains: dict[str, ServiceRunner] = {}
    records: list[dict[str, Any]] = []
    for (domain, kind, count), cell_seed in zip(composition, cell_seeds, strict=True):
        dom = domains.setdefault(domain, ServiceRunner(domain))
        records.extend(_cell(dom, kind, count, random.Random(cell_seed), effect=effect))
    return records


def dumps_jsonl(records: Sequence[dict[str, Any]]) -> bytes:
    """Records as JSON Lines bytes, encoded like the official file (compact, ASCII)."""
    lines = [json.dumps(r, separators=(",", ":")) + "\n" for r in records]
    return "".join(lines).encode("ascii")


def gzip_bytes(data: bytes) -> bytes:
    """Deterministic gzip: level 9, mtime 0, no file name in the header."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def write_generated(seed: int, out: Path, probe: str | None = None) -> int:
    """Generate the set for ``seed`` into ``out`` (gzip if it ends in .gz); returns the count."""
    records = generate(seed, probe)
    data = dumps_jsonl(records)
    if out.name.endswith(".gz"):
        data = gzip_bytes(data)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(out)
    return len(records)


# ---------------------------------------------------------------------------------------------
# Workloads: given the reference run's current state, choose the next call. Each mixes ordinary
# traffic on existing ids with a little misuse (unknown ids, bad sizes, boundary values), the
# way a client population exercises a service.


def _op(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


def _some(rng: random.Random, known: Sequence[str], unknown: str, p_unknown: float = 0.08) -> str:
    """Usually an id that exists, sometimes one that does not."""
    return unknown if not known or rng.random() < p_unknown else rng.choice(list(known))


_AUTH_USERS = ("ana", "ben", "chloe", "dev")
_PASSWORDS = ("hunter22", "swordfish", "abc12", "qwerty", "letmein1", "pw1")


def _auth(rng: random.Random, s: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    users, tokens = s["users"], list(s["tokens"])
    missing = [u for u in _AUTH_USERS if u not in users]
    if len(users) < 2 or (missing and rng.random() < 0.1):
        user = rng.choice(missing or list(_AUTH_USERS))
        return "register", {"user_id": user, "password": rng.choice(_PASSWORDS)}
    weights = {
        "login": 30,
        "validate": 22,
        "refresh": 10,
        "logout": 6,
        "sessions": 8,
        "advance_clock": 20,
        "register": 4,
    }
    op = _op(rng, weights)
    if op == "login":
        user = _some(rng, list(users), "zoe", 0.05)
        right = users.get(user, {}).get("password", "nope")
        password = right if rng.random() < 0.7 else rng.choice(_PASSWORDS)
        # Boundary lifetimes (0, 1, 20, 21) are what clients get wrong most often.
        ttl = rng.choice([1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 19, 20, 20, 21, 21, 0, 1])
        return "login", {"user_id": user, "password": password, "ttl": ttl}
    live = [t for t in tokens if s["clock"] < s["tokens"][t]["expires_at"]]
    if op in ("validate", "logout"):
        pool = live if live and rng.random() < 0.6 else tokens
        return op, {"token": _some(rng, pool, "tok99")}
    if op == "refresh":
        # Clients refresh mostly tokens that are about to run out.
        ending = [t for t in live if s["tokens"][t]["expires_at"] - s["clock"] <= 3]
        pool = ending if ending and rng.random() < 0.6 else tokens
        ttl = rng.choice([1, 2, 3, 5, 8, 12, 20, 21])
        return "refresh", {"token": _some(rng, pool, "tok99"), "ttl": ttl}
    if op == "sessions":
        return "sessions", {"user_id": _some(rng, list(users), "zoe", 0.05)}
    if op == "advance_clock":
        return "advance_clock", {"delta": rng.choice([0, 1, 1, 1, 2, 2, 3, 4])}
    return "register", {"user_id": rng.choice(_AUTH_USERS), "password": rng.choice(_PASSWORDS)}


_ACCOUNTS = ("acc1", "acc2", "acc3", "acc4", "acc5")


def _bank(rng: random.Random, s: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    accounts = list(s["accounts"])
    closed = [a for a in _ACCOUNTS if a not in accounts]
    if len(accounts) < 2 or (closed and rng.random() < 0.06):
        kind = rng.choice(["checking", "checking", "savings", "savings", "brokerage"])
        return "open_account", {"account_id": rng.choice(closed or _ACCOUNTS), "kind": kind}
    frozen = [a for a in accounts if s["accounts"][a]["frozen"]]
    weights = {
        "deposit": 22,
        "withdraw": 24,
        "transfer": 18,
        "balance": 14,
        "statement": 9,
        "freeze": 3,
        "unfreeze": 4,
        "open_account": 2,
    }
    op = _op(rng, weights)
    account = _some(rng, accounts, "acc9", 0.04)
    if op == "deposit":
        amount = rng.choice([rng.randint(1, 400)] * 4 + [0, 100, 250])
        return "deposit", {"account_id": account, "amount": amount}
    if op == "withdraw":
        amount = rng.choice([rng.randint(5, 250), rng.randint(5, 120)] * 3 + [100, 0])
        return "withdraw", {"account_id": account, "amount": amount}
    if op == "transfer":
        others = [a for a in accounts if a != account]
        target = account if rng.random() < 0.05 else _some(rng, others, "acc9", 0.03)
        amount = rng.choice([rng.randint(10, 200)] * 5 + [rng.randint(450, 600), 500, 0])
        return "transfer", {"from_id": account, "to_id": target, "amount": amount}
    if op == "statement":
        return "statement", {"account_id": account, "count": rng.randint(0, 6)}
    if op == "open_account":
        return "open_account", {"account_id": rng.choice(_ACCOUNTS), "kind": "checking"}
    if op == "unfreeze":
        return "unfreeze", {"account_id": _some(rng, frozen, account, 0.1)}
    return op, {"account_id": account}


_CART_USERS = ("u1", "u2", "u3")
_PRODUCTS = ("apple", "bread", "cheese", "coffee", "milk", "tea")


def _cart(rng: random.Random, s: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    weights = {"add_item": 42, "remove_item": 12, "apply_coupon": 10, "quote": 22, "checkout": 8}
    op = _op(rng, weights)
    user = rng.choice(_CART_USERS)
    if op == "remove_item":
        # Shoppers remove from carts that hold something.
        busy = [u for u in _CART_USERS if s["carts"].get(u)]
        user = _some(rng, busy, user, 0.1)
    lines = list(s["carts"].get(user, {}))
    if op == "add_item":
        product = "caviar" if rng.random() < 0.03 else rng.choice(_PRODUCTS)
        qty = rng.choice([1] * 9 + [2] * 6 + [3] * 3 + [0])
        return "add_item", {"user_id": user, "product": product, "qty": qty}
    if op == "remove_item":
        product = _some(rng, lines, rng.choice(_PRODUCTS), 0.15)
        return "remove_item", {"user_id": user, "product": product, "qty": rng.choice([1, 1, 2, 5])}
    if op == "apply_coupon":
        code = rng.choice(["SAVE10", "SAVE10", "SAVE25", "FREEBIE"])
        return "apply_coupon", {"user_id": user, "code": code}
    return op, {"user_id": user}


_DIRS = ("/docs", "/docs/old", "/img", "/img/raw", "/tmp", "/docs/old/2019", "/img/raw/a/b")
_FILES = ("a.txt", "b.md", "c.log")


def _filesystem(rng: random.Random, s: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    nodes = s["nodes"]
    dirs = [p for p, n in nodes.items() if n["kind"] == "dir"]
    files = [p for p, n in nodes.items() if n["kind"] == "file"]
    weights = {
        "mkdir": 12,
        "write": 24,
        "append": 12,
        "stat": 10,
        "listdir": 8,
        "delete": 9,
        "recent": 7,
        "usage": 5,
        "advance_clock": 13,
    }
    op = _op(rng, weights)
    if op == "mkdir":
        return "mkdir", {"path": rng.choice(_DIRS)}
    if op == "write":
        if files and rng.random() < 0.3:
            path = rng.choice(files)
        else:
            parent = rng.choice(dirs)
            path = ("" if parent == "/" else parent) + "/" + rng.choice(_FILES)
        return "write", {"path": path, "size": rng.choice([rng.randint(0, 300), 50, 0])}
    if op == "append":
        size = rng.choice([rng.randint(1, 150)] * 6 + [10, 0])
        return "append", {"path": _some(rng, files, "/nope.txt"), "size": size}
    if op in ("stat", "delete"):
        return op, {"path": _some(rng, [p for p in nodes if p != "/"], "/ghost", 0.06)}
    if op == "listdir":
        return "listdir", {"path": _some(rng, dirs, rng.choice(files or ["/ghost"]), 0.1)}
    if op == "recent":
        return "recent", {"max_age": rng.randint(0, 5)}
    if op == "advance_clock":
        return "advance_clock", {"delta": rng.choice([0, 1, 1, 2, 3])}
    return "usage", {}


_CLIENTS = ("c1", "c2", "c3")


def _ratelimiter(rng: random.Random, s: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    weights = {"hit": 60, "status": 14, "pardon": 5, "advance_clock": 21}
    op = _op(rng, weights)
    client = rng.choice(_CLIENTS)
    if op == "hit":
        cost = rng.choice([1] * 12 + [2] * 6 + [3] * 3 + [0, 4])
        return "hit", {"client": client, "cost": cost}
    if op == "advance_clock":
        return "advance_clock", {"delta": rng.choice([0, 1, 1, 2, 2, 3, 5])}
    return op, {"client": client}


_SLOTS = ("A", "B", "C", "D")
_GUESTS = ("u1", "u2", "u3", "u4")


def _reservation(rng: random.Random, s: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    slots, bookings = list(s["slots"]), s["bookings"]
    unopened = [x for x in _SLOTS if x not in slots]
    if len(slots) < 2 or (unopened and rng.random() < 0.05):
        capacity = rng.choice([2, 3, 4, 5, 6, 8, 10, 12, 0, 13])
        return "add_slot", {"slot_id": rng.choice(unopened or _SLOTS), "capacity": capacity}
    weights = {
        "hold": 34,
        "confirm": 15,
        "cancel": 8,
        "quota": 9,
        "slot": 11,
        "advance_clock": 19,
        "add_slot": 4,
    }
    op = _op(rng, weights)
    held = [b for b, x in bookings.items() if x["status"] == "held"]
    if op == "hold":
        seats = rng.choice([1] * 6 + [2] * 5 + [3] * 2 + [0])
        slot = _some(rng, slots, "Z", 0.04)
        return "hold", {"user_id": rng.choice(_GUESTS), "slot_id": slot, "seats": seats}
    if op in ("confirm", "cancel"):
        pool = held if held and rng.random() < 0.75 else list(bookings)
        return op, {"booking_id": _some(rng, pool, "b99", 0.05)}
    if op == "quota":
        return "quota", {"user_id": rng.choice(_GUESTS)}
    if op == "slot":
        return "slot", {"slot_id": _some(rng, slots, "Z", 0.05)}
    if op == "advance_clock":
        return "advance_clock", {"delta": rng.choice([0, 1, 1, 1, 2, 3])}
    capacity = rng.choice([2, 4, 6, 12, 13])
    return "add_slot", {"slot_id": rng.choice(_SLOTS), "capacity": capacity}


WORKLOADS: dict[str, Workload] = {
    "auth": _auth,
    "bank": _bank,
    "cart": _cart,
    "filesystem": _filesystem,
    "ratelimiter": _ratelimiter,
    "reservation": _reservation,
}
