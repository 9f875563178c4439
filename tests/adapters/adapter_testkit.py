"""Shared helpers for the adapter tests (imported by the test_adapter_* modules)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from evaltally.adapters.base import Endpoint, HttpResponse
from evaltally.records import AttemptError, ErrorAction


def endpoint_factory(**defaults: Any) -> Callable[..., Endpoint]:
    """`endpoint(**kw)`: an Endpoint of these defaults, any field overridden by `kw`."""

    def endpoint(**kw: Any) -> Endpoint:
        return Endpoint(**(defaults | kw))

    return endpoint


def response(
    body: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> HttpResponse:
    """A response whose body is `body` as JSON (bytes are sent as they are)."""
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    return HttpResponse(status, dict(headers or {}), raw)


def assert_error(
    result: object,
    action: ErrorAction,
    error_type: str,
    *,
    key_env: str,
    status: int | None = None,
    retry_after_s: float | None = None,
) -> AttemptError:
    """`result` is an AttemptError with `action`, its detail led by `[error_type]`; one that
    stops the lane for its credentials names `key_env`. With `status`: its error_class is
    http_<status>; with `retry_after_s`: a retried one waits that long."""
    assert isinstance(result, AttemptError)
    assert result.action is action
    if status is not None:
        assert result.error_class == f"http_{status}"
    assert result.detail.startswith(f"[{error_type}]")
    if retry_after_s is not None and action is ErrorAction.RETRY:
        assert result.retry_after_s == retry_after_s
    if action is ErrorAction.STOP_LANE and result.stop_kind == "credentials":
        assert key_env in result.detail
    return result
