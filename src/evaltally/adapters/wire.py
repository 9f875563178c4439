"""Small helpers every dialect shares: canonical JSON requests, system-prompt splitting, safe
reading of untrusted response JSON (any field may be missing or of the wrong type), and the
`WireAdapter` base that holds an adapter's key variable and reasoning switch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaltally.adapters.base import Endpoint, HttpRequest
from evaltally.adapters.http_errors import classify_status
from evaltally.adapters.reasoning import reasoning_params
from evaltally.records import AttemptError, Message, Usage, canonical_json

JSON_HEADERS = {"content-type": "application/json", "accept": "application/json"}


class WireAdapter:
    """What the HTTP adapters share: `key_env`, the variable a rejected key is reported under,
    and `reasoning_style`, the preset's reasoning switch (reasoning.py). Subclasses give both
    their defaults (as dataclass fields, or in their own `__init__`)."""

    key_env: str | None
    reasoning_style: str

    def switch(self, endpoint: Endpoint) -> dict[str, Any]:
        """The body fields the reasoning switch sends for this endpoint's reasoning."""
        return reasoning_params(self.reasoning_style, endpoint.reasoning)

    def http_error(
        self,
        status: int,
        headers: Mapping[str, str],
        *,
        error_type: str | None,
        message: str | None,
        retry_hint_s: float | None = None,
        auth_failure: bool = False,
        capacity_type: bool = False,
    ) -> AttemptError:
        """`classify_status` of an error response, naming this adapter's key variable."""
        return classify_status(
            status,
            headers,
            error_type=error_type,
            message=message,
            key_env=self.key_env,
            retry_hint_s=retry_hint_s,
            auth_failure=auth_failure,
            capacity_type=capacity_type,
        )


def json_post(url: str, payload: Mapping[str, Any], headers: Mapping[str, str]) -> HttpRequest:
    """A POST whose body is the canonical JSON of `payload`: same inputs, same bytes, same hash."""
    return HttpRequest(
        method="POST",
        url=url,
        body=canonical_json(payload),
        headers={**JSON_HEADERS, **headers},
    )


def join_url(base_url: str, path: str) -> str:
    """`base_url` + `path` with exactly one slash between them."""
    return base_url.rstrip("/") + "/" + path.lstrip("/")


def split_system(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """System messages joined into one prompt (APIs that take it out of band), and the rest."""
    system = [m["content"] for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    return ("\n\n".join(system) if system else None), rest


def as_dict(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """`value` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def as_int(value: object) -> int:
    """A token count from JSON: non-negative ints only, anything else counts as 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


MAX_COUNT = 2**53
"""A provider's count is kept below this: exact as a float, storable in SQLite and JSON."""


def as_count(value: object) -> int:
    """A count from provider JSON: a non-negative int or, as proto3 JSON sends 64-bit integers,
    a string of ASCII digits; at most MAX_COUNT. Anything else ("²", "1e9", a list) is 0."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 20:
        value = int(value)
    return min(as_int(value), MAX_COUNT)


def http_status(value: object) -> int | None:
    """`value` if it is an HTTP status code (an int 100..599), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
        return value
    return None


def as_str(value: object) -> str | None:
    """`value` if it is a string, else None."""
    return value if isinstance(value, str) else None


def header_or(headers: Mapping[str, str], name: str, fallback: object) -> str | None:
    """A request id: the named response header, else a string found in the body."""
    return headers.get(name) or as_str(fallback)


def normalize_finish(raw: object, table: Mapping[str, str]) -> str | None:
    """A provider finish reason in the shared vocabulary: "stop", "length", "safety:<why>".

    Reasons the table does not know pass through lower-cased, so nothing is hidden.
    """
    if not isinstance(raw, str):
        return None
    return table.get(raw, raw.lower())


def cached_input_usage(
    *, uncached: int, cache_read: int, cache_write: int, output: int, reasoning: int
) -> Usage:
    """Usage from an API that reports uncached, cache-read and cache-write input apart
    (Anthropic, Bedrock Converse): input_tokens counts all three, cached_tokens the reads."""
    return Usage(
        input_tokens=uncached + cache_read + cache_write,
        output_tokens=output,
        reasoning_tokens=reasoning,
        cached_tokens=cache_read,
    )
