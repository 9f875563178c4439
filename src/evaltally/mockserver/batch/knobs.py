"""The batch knobs of MockConfig: batch-level fault rules and their validation (kept apart from
config.py, which holds the synchronous knobs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaltally.errors import ConfigError
from evaltally.mockserver.fault_rules import FaultRule

BATCH_FAULT_KINDS = ("upload_error", "create_lost", "fail", "expire", "download_drop")
"""upload_error: the file upload answers 503 and stores nothing.
create_lost: the batch is created, but the connection drops before the answer (the client must
  find it by listing, not create a second one).
fail: the batch fails validation.
expire: the batch expires with the first half of its requests answered.
download_drop: a results download is cut off halfway through the body."""

TIMING_KNOBS = (
    "batch_validating_s",
    "batch_in_progress_s",
    "batch_finalizing_s",
    "batch_latency_s",
)
BATCH_KNOBS = (*TIMING_KNOBS, "batch_chunk_bytes", "batch_faults", "batch_line_faults")


@dataclass(frozen=True)
class BatchFault:
    """The next `count` batches (or uploads, downloads) meet fault `kind`."""

    kind: str
    count: int = 1


def coerce_batch_knob(source: str, key: str, value: Any) -> Any:
    """A batch knob from TOML/JSON/CLI into its field's type."""
    try:
        if key == "batch_faults":
            return tuple(_fault(source, i, v) for i, v in enumerate(_list(source, key, value)))
        if key == "batch_line_faults":
            items = _list(source, key, value)
            return tuple(
                v if isinstance(v, FaultRule) else FaultRule.from_mapping(v, f"{key}[{i}]")
                for i, v in enumerate(items)
            )
        if key == "batch_chunk_bytes":
            if isinstance(value, bool) or int(value) != value:
                raise ValueError(value)
            return int(value)
        return float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(source, key, f"invalid value {value!r}") from exc


def validate_batch_knobs(config: Any) -> None:
    src = "<mock config>"
    for name in TIMING_KNOBS:
        if getattr(config, name) < 0:
            raise ConfigError(src, name, "must be >= 0")
    if config.batch_chunk_bytes < 1:
        raise ConfigError(src, "batch_chunk_bytes", "must be >= 1")
    for i, fault in enumerate(config.batch_faults):
        if fault.kind not in BATCH_FAULT_KINDS or fault.count < 1:
            raise ConfigError(
                src, f"batch_faults[{i}]", f"kind must be one of {BATCH_FAULT_KINDS}, count >= 1"
            )
    for i, rule in enumerate(config.batch_line_faults):
        rule.validate(f"batch_line_faults[{i}]")
        if not rule.kind.isdigit():
            raise ConfigError(src, f"batch_line_faults[{i}].kind", "must be an HTTP status")


def _list(source: str, key: str, value: Any) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise ConfigError(source, key, "must be a list of tables/objects")
    return list(value)


def _fault(source: str, i: int, value: Any) -> BatchFault:
    if isinstance(value, BatchFault):
        return value
    if not isinstance(value, Mapping) or set(value) - {"kind", "count"} or "kind" not in value:
        raise ConfigError(source, f"batch_faults[{i}]", "must be {kind = ..., count = N}")
    count = value.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int):
        raise ConfigError(source, f"batch_faults[{i}].count", "must be an integer")
    return BatchFault(str(value["kind"]), count)
