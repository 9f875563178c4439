"""Row hash chains and the plan fingerprint.

row_hash(n) = sha256(row_hash(n-1) + canonical_json(values of row n)), per table, starting from
the empty string. Editing a row breaks its own hash; deleting or inserting a row breaks the next
row's link. The hash covers exactly the values as stored (so `verify` can recompute it from the
database alone); BLOB columns enter the hash as their sha256, which keeps the hashed text small.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from evaltally.records import canonical_json

GENESIS = ""


def _hashable(value: Any) -> Any:
    if value is None:  # most blob columns of a row are empty
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return "sha256:" + hashlib.sha256(value).hexdigest()
    return value


def row_hash(prev: str, values: Sequence[Any], blobs: Sequence[int] = ()) -> str:
    """The chained hash of one row (values in schema.HASHED_COLUMNS order).

    `blobs` lists the positions of BLOB columns (schema.BLOB_POSITIONS); only those are
    replaced by their digest, which keeps the per-row cost low on the hot path.
    """
    if blobs:
        values = list(values)
        for i in blobs:
            values[i] = _hashable(values[i])
    digest = hashlib.sha256(prev.encode("ascii"))
    digest.update(canonical_json(values))
    return digest.hexdigest()


class PlanFingerprint:
    """sha256 over the plan's call ids in sorted order, one per line.

    Order-independent by construction (ids are fed sorted), so a planner can compute the same
    value from its own set of ids and compare it with the ledger's `plan` meta entry.
    """

    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self.count = 0

    def add(self, call_id: str) -> None:
        self._h.update(call_id.encode("utf-8") + b"\n")
        self.count += 1

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def plan_fingerprint(call_ids: Iterable[str]) -> str:
    fp = PlanFingerprint()
    for call_id in sorted(call_ids):
        fp.add(call_id)
    return fp.hexdigest()


def request_hash(body: bytes) -> str:
    """The request hash recorded with each attempt and its outcome (the runner computes it,
    `tally verify` recomputes it): full hex sha256 of the exact request body bytes."""
    return hashlib.sha256(body).hexdigest()
