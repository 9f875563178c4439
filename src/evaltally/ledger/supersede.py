"""Replacing one model's planned calls in a run (`tally run CONFIG --replace-model KEY`).

A model whose config changed (a model id with a typo, wrong params) plans calls with new ids:
the chains that bind it are new chains. Its recorded chains are not deleted or rewritten
(the ledger is append-only); they are listed in `superseded` meta entries, written in the same
transaction as the new plan, and from then on every read leaves them out (ledger/current.py,
`PLANNED`): they are in no status count, export row, denominator or pending work, and nothing
is ever sent for them again (`tally verify` checks that).

A chain is superseded whole: every one of its recorded calls must be dropped by the new plan,
and one of its calls must be a named model's. A chain binding the named model with another
(an observer answered, then the named judge) is superseded with it, so that other model's step
of it is sent again in the new chain.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from evaltally.errors import PlanMismatchError
from evaltally.ledger.batch_schema import held_by_open_batch
from evaltally.ledger.current import SUPERSEDED_CHAINS, SUPERSEDED_KEY
from evaltally.ledger.writer import Row, Writer
from evaltally.records import canonical_json

REPLACE_OPTION = "--replace-model"
_PER_ENTRY = 5000
"""Chain ids per meta entry: a model of a million calls is a few hundred entries, not one row
of tens of megabytes."""
_EXAMPLES = 5


@dataclass(frozen=True)
class Replacement:
    """What a session was asked to replace, and why (written into the supersession)."""

    models: frozenset[str]
    changes: tuple[str, ...] = ()
    """The config changes of those models (`models[KEY].model: 'a' -> 'b'`)."""
    command: str = ""


@dataclass
class Superseded:
    """One replacement of one model: its calls superseded in one session."""

    model: str
    session: int
    at: float
    calls: int = 0
    chains: int = 0
    changes: list[str] = field(default_factory=list)
    command: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


async def superseded_chain_ids(writer: Writer) -> set[str]:
    return {row[0] for row in await writer.db.query(SUPERSEDED_CHAINS[1:-1])}


async def supersede(
    writer: Writer, dropped: list[int], gone: set[str], replace: Replacement | None
) -> tuple[list[int], dict[str, int]]:
    """Deal with the recorded calls (`dropped`: planned seqs) the new plan no longer lists,
    inside the plan's transaction. Those of chains superseded before (`gone`) stay as they
    were. The rest are superseded when `replace` allows it (the second value: model -> calls
    superseded), or returned for the caller to refuse (the first: no `replace`, a plain
    changed plan)."""
    rows = await _rows(writer, "seq", dropped)
    fresh = [r for r in rows if r[1] not in gone]
    if not fresh:
        return [], {}
    if replace is None:
        return [r[0] for r in fresh], {}
    chains = sorted({r[1] for r in fresh})
    members = await _rows(writer, "chain_id", chains)
    dropped_set = {r[0] for r in fresh}
    kept = [r for r in members if r[0] not in dropped_set]
    by_chain: dict[str, set[str]] = {}
    for _, chain, model, _ in members:
        by_chain.setdefault(chain, set()).add(model)
    unnamed = [r for r in fresh if not by_chain[r[1]] & replace.models]
    if unnamed or kept:
        raise _refusal(writer, unnamed, kept, replace)
    if held := await _in_open_batch(writer, [r[3] for r in members]):
        raise PlanMismatchError(
            f"{writer.path}: {REPLACE_OPTION}: call {held[:12]}… is a line of a provider batch "
            "still open, whose answer would come back to a superseded call; collect it first "
            "(`tally resume` the run with the config it was started with), then replace; "
            "nothing was changed."
        )
    entries, calls = _entries(writer, replace, chains, members, by_chain)
    await writer.insert({"meta": entries})
    return [], calls


def _entries(
    writer: Writer,
    replace: Replacement,
    chains: list[str],
    members: list[tuple[Any, ...]],
    by_chain: dict[str, set[str]],
) -> tuple[list[Row], dict[str, int]]:
    """The supersession entries, per named model (a chain binding two named models is listed
    under the first), and the calls superseded per model."""
    owner = {c: min(by_chain[c] & replace.models) for c in chains}
    calls: dict[str, int] = {}
    for _, chain, _, _ in members:
        calls[owner[chain]] = calls.get(owner[chain], 0) + 1
    entries: list[Row] = []
    at = time.time()
    for model in sorted(calls):
        own = [c for c in chains if owner[c] == model]
        mine = [c for c in replace.changes if c.startswith(f"models[{model}]")]
        for i in range(0, len(own), _PER_ENTRY):
            value = {
                "model": model,
                "chains": own[i : i + _PER_ENTRY],
                "calls": calls[model] if i == 0 else 0,
                "changes": mine,
                "command": replace.command,
            }
            entries.append(
                writer.make_row("meta", (SUPERSEDED_KEY, canonical_json(value).decode(), at))
            )
    return entries, calls


async def _rows(writer: Writer, column: str, values: list[Any]) -> list[tuple[Any, ...]]:
    """(seq, chain_id, model, call_id) of the planned rows whose `column` is in `values`."""
    out: list[tuple[Any, ...]] = []
    for i in range(0, len(values), 900):  # far below SQLite's bound-parameter cap
        part = values[i : i + 900]
        out += [
            tuple(r)
            for r in await writer.db.query(
                f"SELECT seq, chain_id, model, call_id FROM planned WHERE {column} IN"
                f" ({','.join('?' * len(part))}) ORDER BY seq",
                part,
            )
        ]
    return out


async def _in_open_batch(writer: Writer, call_ids: list[str]) -> str | None:
    """A call of `call_ids` whose attempt is a line of a batch not yet closed, if any."""
    for i in range(0, len(call_ids), 900):
        part = call_ids[i : i + 900]
        rows = await writer.db.query(
            f"SELECT a.call_id FROM attempts a WHERE a.call_id IN ({','.join('?' * len(part))})"
            f" AND a.kind = 'start' AND {held_by_open_batch('a')} LIMIT 1",
            part,
        )
        if rows:
            return str(rows[0][0])
    return None


def _refusal(
    writer: Writer,
    unnamed: list[tuple[Any, ...]],
    kept: list[tuple[Any, ...]],
    replace: Replacement,
) -> PlanMismatchError:
    named = ", ".join(sorted(replace.models))
    if unnamed:
        models = sorted({r[2] for r in unnamed})
        return PlanMismatchError(
            f"{writer.path}: {REPLACE_OPTION} {named} replaces only the calls of {named}, but "
            f"the config's plan also drops {len(unnamed)} recorded call(s) of "
            f"{', '.join(models)} (e.g. {_examples(unnamed)}); nothing was changed."
        )
    return PlanMismatchError(
        f"{writer.path}: {REPLACE_OPTION} {named}: the config's plan keeps {len(kept)} call(s) "
        f"of chains it otherwise drops (e.g. {_examples(kept)}): a chain is replaced whole or "
        "not at all; nothing was changed."
    )


def _examples(rows: Iterable[tuple[Any, ...]]) -> str:
    return "; ".join(f"{cid[:12]}… model={m}" for _, _, m, cid in list(rows)[:_EXAMPLES])


def returning(gone: set[str], chains: Iterable[str]) -> str | None:
    """A chain the new plan lists that was superseded before, if any: a superseded chain never
    comes back (its calls would be counted twice, or its old answers taken for new ones)."""
    for chain in chains:
        if chain in gone:
            return chain
    return None


def supersessions(conn: sqlite3.Connection) -> list[Superseded]:
    """Every replacement the run recorded, oldest first, per session and model."""
    found: dict[tuple[int, str], Superseded] = {}
    for session, at, value in conn.execute(
        "SELECT session, at, value_json FROM meta WHERE key = ? ORDER BY seq", (SUPERSEDED_KEY,)
    ):
        entry = orjson.loads(value)
        key = (session, entry["model"])
        if key not in found:
            found[key] = Superseded(
                entry["model"], session, at, changes=entry.get("changes", []),
                command=entry.get("command", ""),
            )  # fmt: skip
        found[key].calls += int(entry.get("calls", 0))
        found[key].chains += len(entry.get("chains", []))
    return list(found.values())


def sent_after_supersession(conn: sqlite3.Connection) -> Iterator[str]:
    """`tally verify`: an attempt started, or an outcome recorded, for a superseded call in
    the session that superseded it or later (nothing is sent for a superseded call)."""
    started: dict[str, int] = {}
    for session, value in conn.execute(
        "SELECT session, value_json FROM meta WHERE key = ? ORDER BY seq", (SUPERSEDED_KEY,)
    ):
        for chain in orjson.loads(value).get("chains", []):
            started.setdefault(chain, session)
    if not started:
        return
    for table, kind in (("attempts", " AND t.kind = 'start'"), ("outcomes", "")):
        for seq, call_id, chain, session in conn.execute(
            f"SELECT t.seq, t.call_id, p.chain_id, t.session FROM {table} t JOIN planned p"
            f" ON p.call_id = t.call_id WHERE p.chain_id IN {SUPERSEDED_CHAINS}{kind}"
            " ORDER BY t.seq"
        ):
            if session >= started[chain]:
                yield (
                    f"{table} seq {seq} (call {call_id[:8]}…): recorded in session {session} "
                    f"for a call superseded in session {started[chain]}"
                )
