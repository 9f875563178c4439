"""Items from a Hugging Face `datasets` dataset (the optional extra `evaltally[hf]`): a hub name
pinned to a revision, or a local dataset directory, loaded with `datasets.load_dataset` and read
through the same field mapping as a CSV or Parquet file (tabular.py), so the plan is the one its
JSONL equivalent gives.

The data source recorded for the report is the dataset's reference (name, config, split,
revision) with the SHA-256 of the items as read (canonical JSON), since a hub dataset has no
one file to hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaltally.benchmarks.prompts.tabular import FieldMap, items_from_rows
from evaltally.errors import DataError
from evaltally.ledger.scratch import ScratchStore
from evaltally.records import canonical_json


@dataclass(frozen=True)
class DatasetRef:
    name: str
    """A hub dataset id, or a local directory (resolved against the config's directory)."""
    config: str | None
    split: str
    revision: str | None

    def label(self) -> str:
        config = f"[{self.config}]" if self.config else ""
        revision = f"@{self.revision}" if self.revision else ""
        return f"dataset {self.name}{config}/{self.split}{revision}"


def load_dataset_items(ref: DatasetRef, fields: FieldMap) -> ScratchStore:
    """Item id -> item, in the split's order."""
    if ref.revision is None and not Path(ref.name).exists():
        raise DataError(
            f"{ref.label()}: a hub dataset needs `revision` (a commit hash or tag) so the same "
            "config always reads the same items"
        )
    return items_from_rows(ref.label(), _rows(ref), fields)


def items_sha256(items: ScratchStore) -> str:
    """SHA-256 of the canonical JSON of the list of items, written item by item."""
    digest = hashlib.sha256(b"[")
    for n, (_, item) in enumerate(items.pairs()):
        digest.update(b"," + canonical_json(item) if n else canonical_json(item))
    digest.update(b"]")
    return digest.hexdigest()


def _rows(ref: DatasetRef) -> Iterator[tuple[Sequence[str], Mapping[str, Any]]]:
    try:
        import datasets
    except ImportError:
        raise DataError(
            f"{ref.label()}: loading a Hugging Face dataset needs `datasets`: "
            "pip install 'evaltally[hf]'"
        ) from None
    datasets.disable_progress_bars()
    try:
        loaded = datasets.load_dataset(ref.name, ref.config, split=ref.split, revision=ref.revision)
    # `datasets` raises many unrelated types (missing files, hub errors, bad configs, network);
    # each becomes one line naming the dataset.
    except Exception as exc:
        raise DataError(f"{ref.label()}: cannot load it: {type(exc).__name__}: {exc}") from None
    columns = list(loaded.column_names)
    for row in loaded:
        yield columns, row
