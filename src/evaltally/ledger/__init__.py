"""The append-only run ledger: store (single writer), resume queries, status, export, verify."""

from evaltally.ledger.bodies import unpack as unpack_body
from evaltally.ledger.chain import plan_fingerprint, request_hash
from evaltally.ledger.export import export_rows, export_run
from evaltally.ledger.export_record import ExportRecord, ExportRow
from evaltally.ledger.results import PendingChain, PendingCount, PlanDelta, RecordedAnswer
from evaltally.ledger.schema import SCHEMA_VERSION
from evaltally.ledger.status import RunStatus, StatusCounts, latest_meta, run_status
from evaltally.ledger.store import Ledger
from evaltally.ledger.verify import VerifyReport, verify_run

__all__ = [
    "SCHEMA_VERSION",
    "ExportRecord",
    "ExportRow",
    "Ledger",
    "PendingChain",
    "PendingCount",
    "PlanDelta",
    "RecordedAnswer",
    "RunStatus",
    "StatusCounts",
    "VerifyReport",
    "export_rows",
    "export_run",
    "latest_meta",
    "plan_fingerprint",
    "request_hash",
    "run_status",
    "unpack_body",
    "verify_run",
]
