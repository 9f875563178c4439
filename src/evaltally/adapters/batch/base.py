"""The batch seam: what the runner's batch driver needs from one provider's batch API.

A batch adapter only translates, like a synchronous one (adapters/base.py): it builds the
requests that submit, poll, find and download a batch, and reads their answers. Two rules keep
batch and synchronous calls the same thing:

- each request inside a batch carries exactly the body the provider's synchronous adapter builds
  for that call (`BatchItem.body`), so its request hash is the synchronous one;
- each result line comes back as the `HttpResponse` the synchronous endpoint would have answered
  (`LineResult.outcome`), so the synchronous adapter's `parse_response` reads and classifies it:
  the same Completion, the same AttemptError (a 400 fails the call, a 5xx is retried). Lines
  that never ran (expired, cancelled) come back as a retryable AttemptError.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, BinaryIO, Protocol

from evaltally.adapters.base import Endpoint, HttpAdapter, HttpRequest, HttpResponse
from evaltally.adapters.batch.results import Unreadable, guarded, result_lines
from evaltally.adapters.http_errors import bad_body, decode_json
from evaltally.adapters.wire import as_dict, as_str
from evaltally.errors import ProviderError
from evaltally.records import AttemptError, ErrorAction

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,199}$")


class BatchPhase(StrEnum):
    """A batch's state in one vocabulary (the provider's own word is kept beside it)."""

    VALIDATING = "validating"
    IN_PROGRESS = "in_progress"
    FINALIZING = "finalizing"
    COMPLETED = "completed"
    FAILED = "failed"
    EXPIRED = "expired"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"
    """A state word this version does not know: polled on for `unknown_state_s`, no longer."""

    @property
    def ended(self) -> bool:
        """No result will change any more: read what there is."""
        return self in _ENDED


_ENDED = frozenset(
    {BatchPhase.COMPLETED, BatchPhase.FAILED, BatchPhase.EXPIRED, BatchPhase.CANCELLED}
)


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """The provider's documented ceiling for one batch."""

    max_requests: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One planned call inside a batch: its id (the batch's custom_id) and its request body."""

    call_id: str
    body: bytes


@dataclass(frozen=True, slots=True)
class BatchStatus:
    phase: BatchPhase
    provider_state: str
    counts: Mapping[str, int] = field(default_factory=dict)
    results: tuple[str, ...] = ()
    """What to download once the batch ended (file ids, or the batch itself)."""
    detail: str | None = None
    """The provider's own explanation (validation errors of a failed batch)."""


@dataclass(frozen=True, slots=True)
class LineResult:
    call_id: str
    raw: bytes
    """The provider's result line as received: the attempt's recorded response body."""
    outcome: HttpResponse | AttemptError


@dataclass(frozen=True, slots=True)
class Marker:
    """What identifies one of our batches at the provider when its id was never recorded
    (the process died between sending the create request and recording the answer)."""

    batch_key: str
    file_id: str | None
    requests: int
    not_before: float
    """Unix time just before the create request was sent."""
    known: frozenset[str]
    """Provider ids this run already owns: never adopted twice."""


class BatchAdapter(Protocol):
    """Translate one provider's batch API. Every method is pure."""

    kind: str

    def item_bytes(self, item: BatchItem) -> int:
        """What one item adds to the submission (for splitting by bytes)."""

    def payload(self, batch_key: str, items: Sequence[BatchItem]) -> bytes:
        """The submission: the uploaded JSONL file, or the body of the create request."""

    def upload_request(
        self, endpoint: Endpoint, batch_key: str, payload: bytes
    ) -> HttpRequest | None:
        """The file upload, for APIs that take the batch as a file (else None)."""

    def read_upload(self, response: HttpResponse) -> str | AttemptError:
        """The uploaded file's id."""

    def create_request(
        self, endpoint: Endpoint, batch_key: str, payload: bytes, file_id: str | None
    ) -> HttpRequest: ...

    def read_created(self, response: HttpResponse) -> str | AttemptError:
        """The provider's id of the new batch."""

    def status_request(self, endpoint: Endpoint, provider_id: str) -> HttpRequest: ...

    def read_status(self, response: HttpResponse) -> BatchStatus | AttemptError: ...

    def list_request(self, endpoint: Endpoint, page: str | None) -> HttpRequest: ...

    def find(
        self, response: HttpResponse, marker: Marker
    ) -> tuple[str | None, str | None] | AttemptError:
        """(the id of the batch the marker identifies or None, the next page or None)."""

    def download_request(self, endpoint: Endpoint, provider_id: str, ref: str) -> HttpRequest: ...

    def read_results(
        self, source: BinaryIO, members: Sequence[str]
    ) -> Iterator[LineResult | Unreadable]:
        """Every result line of one downloaded document (a file, read in bounded pieces);
        `members` are the batch's call ids in submission order. Lines naming no member are
        skipped; lines that cannot be tied to a call are Unreadable (never a guess)."""


class InlineBatch:
    """For APIs that take the requests inside the create request: there is no file to upload."""

    def upload_request(self, endpoint: Endpoint, batch_key: str, payload: bytes) -> None:
        return None

    def read_upload(self, response: HttpResponse) -> str | AttemptError:
        raise NotImplementedError("never called: upload_request() is None for inline batches")


def split(
    items: Sequence[BatchItem], limits: BatchLimits, size: Callable[[BatchItem], int]
) -> tuple[list[list[BatchItem]], list[BatchItem]]:
    """Items in submission order, cut into as many batches as the limits require, and the items
    that exceed `max_bytes` on their own (no batch can carry them)."""
    batches: list[list[BatchItem]] = []
    oversize: list[BatchItem] = []
    current: list[BatchItem] = []
    used = 0
    for item in items:
        n = size(item)
        if n > limits.max_bytes:
            oversize.append(item)
            continue
        if current and (len(current) >= limits.max_requests or used + n > limits.max_bytes):
            batches.append(current)
            current, used = [], 0
        current.append(item)
        used += n
    if current:
        batches.append(current)
    return batches, oversize


def auth_headers(sync: HttpAdapter, endpoint: Endpoint) -> dict[str, str]:
    """The credential and version headers the synchronous adapter sends to this endpoint (the
    batch endpoints of every provider here take the same ones)."""
    probe = sync.build_request(endpoint, [{"role": "user", "content": ""}])
    return {k: v for k, v in probe.headers.items() if k not in ("content-type", "accept")}


def get(url: str, headers: Mapping[str, str]) -> HttpRequest:
    return HttpRequest("GET", url, b"", {"accept": "application/json", **headers})


def safe_id(value: object, what: str) -> str:
    """A provider id that is about to become part of a URL path: refused unless it is a plain
    token, so a hostile answer cannot point our credentials at another path."""
    if not isinstance(value, str) or not _SAFE_ID.match(value):
        raise ProviderError(f"the provider returned an unusable {what} id: {str(value)[:80]!r}")
    return value


def read_id(response: HttpResponse, what: str) -> str | AttemptError:
    """The `id` of the object an answer describes (an uploaded file, a new batch)."""
    data = as_dict(decode_json(response.body))
    if "id" not in data:
        return bad_body(response.body, f"no {what} id in the answer", response.status)
    return safe_id(data["id"], what)


def jsonl_results(
    source: BinaryIO,
    members: Sequence[str],
    outcome: Callable[[dict[str, Any]], HttpResponse | AttemptError],
) -> Iterator[LineResult | Unreadable]:
    """The results of a JSONL result file whose lines name their call by `custom_id`."""
    for record in result_lines(source, members):
        if isinstance(record, Unreadable):
            yield record
            continue
        call_id, raw, line = record
        yield LineResult(call_id, raw, guarded(outcome, line, raw))


def id_listing(response: HttpResponse) -> tuple[list[dict[str, Any]], str | None] | AttemptError:
    """The batches of one page of a `{data, has_more, last_id}` listing, and the next page."""
    data = decode_json(response.body)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return bad_body(response.body, "no batch list", response.status)
    last = as_str(data.get("last_id"))
    return [as_dict(b) for b in data["data"]], (last if data.get("has_more") and last else None)


def not_run(kind: str, detail: str) -> AttemptError:
    """A line the provider never ran (expired, cancelled, missing): retried in a later batch."""
    return AttemptError(ErrorAction.RETRY, kind, detail)
