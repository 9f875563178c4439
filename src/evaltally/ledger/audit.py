"""Per-model spend and the reasoning audit, read from a run's ledger and its config copy.

The CTE paper audits exactly this: a model whose reasoning was requested off but whose calls
still report reasoning tokens is flagged, because hidden reasoning both costs money and changes
what the numbers mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from evaltally.ledger.files import connect_ro, ledger_path
from evaltally.ledger.usage import sql_total
from evaltally.records import REASONING_INFERRED

# Usage is provider input: bounded per row and summed without overflow (ledger/usage.py).
_USAGE_BY_MODEL = f"""
SELECT p.model, SUM(o.status IN ('ok', 'parse_error')),
       {sql_total("o.input_tokens")}, {sql_total("o.output_tokens")},
       {sql_total("o.reasoning_tokens")}, COALESCE(SUM(o.reasoning_tokens > 0), 0),
       COALESCE(SUM(instr(o.reason, '{REASONING_INFERRED}') > 0), 0)
FROM outcomes o JOIN planned p ON p.call_id = o.call_id
GROUP BY p.model
"""


class _Price(Protocol):
    def usd(self, input_tokens: int, output_tokens: int) -> float: ...


class _Reasoning(Protocol):
    @property
    def mode(self) -> str: ...


class _Model(Protocol):
    """What the audit reads of a model's config (config.ModelConfig): the ledger never imports
    the config package, which reads run directories through the ledger's files."""

    @property
    def key(self) -> str: ...
    @property
    def reasoning(self) -> _Reasoning: ...
    @property
    def price(self) -> _Price | None: ...


class _Config(Protocol):
    @property
    def models(self) -> Sequence[_Model]: ...


def reasoning_against_request(requested: str | None, reasoning_tokens: int) -> bool:
    """The audit's rule: reasoning was requested off, yet the API reported reasoning tokens."""
    return requested == "off" and reasoning_tokens > 0


@dataclass(frozen=True)
class ModelAudit:
    model: str
    reasoning_requested: str
    outcomes: int
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    calls_with_reasoning: int
    cost_usd: float | None
    calls_reasoning_inferred: int = 0
    """Calls whose reasoning count evaltally worked out: thinking shown without a count
    (estimated from its text), or a total_tokens above prompt + completion."""

    @property
    def flagged(self) -> bool:
        return reasoning_against_request(self.reasoning_requested, self.reasoning_tokens)

    def reasoned(self) -> str | None:
        """That the model reasoned, and how evaltally knows, when any call shows it."""
        if not self.calls_with_reasoning:
            return None
        inferred = (
            f"; {self.calls_reasoning_inferred} counted by evaltally, the provider gave no "
            "count (estimated from visible thinking, or total_tokens above prompt + completion)"
            if self.calls_reasoning_inferred
            else ""
        )
        return (
            f"{self.model}: reasoned in {self.calls_with_reasoning} of {self.outcomes} answered "
            f"calls ({self.reasoning_tokens:,} reasoning tokens{inferred})"
        )

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "flagged": self.flagged}

    def message(self) -> str:
        return (
            f"{self.model}: reasoning was requested off, but {self.calls_with_reasoning} "
            f"of {self.outcomes} answered calls used {self.reasoning_tokens:,} reasoning tokens"
        )


def audit_run(run_dir: Path, config: _Config) -> list[ModelAudit]:
    conn = connect_ro(ledger_path(run_dir))
    try:
        rows = {r[0]: tuple(int(v) for v in r[1:]) for r in conn.execute(_USAGE_BY_MODEL)}
    finally:
        conn.close()
    audits = []
    for m in config.models:
        n, tin, tout, treason, with_reasoning, inferred = rows.get(m.key, (0,) * 6)
        cost = None if m.price is None else m.price.usd(tin, tout)
        audits.append(
            ModelAudit(
                m.key, m.reasoning.mode, n, tin, tout, treason, with_reasoning, cost, inferred
            )
        )
    return audits
