"""The mock provider's batch endpoints behave like the real services: timed state transitions,
faults (expire half done, fail, cancel, lost create answer, failed upload, dropped download),
per-line errors, result documents spanning many reads, and the synchronous answer per body."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest
from batch_kit import FAST, KINDS, Driven

from evaltally.adapters.base import HttpRequest
from evaltally.adapters.batch.base import Marker
from evaltally.errors import ConfigError
from evaltally.mockserver import FaultRule, MockConfig
from evaltally.mockserver.batch.knobs import BatchFault
from evaltally.records import AttemptError, Completion, ErrorAction
from evaltally.runner.transport import TransportFailure

TEXTS = [f"question {i}" for i in range(6)]


@pytest.fixture
async def driven() -> AsyncIterator[list[Driven]]:
    made: list[Driven] = []
    yield made
    for d in made:
        await d.transport.close()


async def _start(
    mock_server: Callable[..., Any], driven: list[Driven], kind: str, **knobs: Any
) -> Any:
    srv = await mock_server(**{**FAST, **knobs})
    d = Driven.start(kind, srv.base_url)
    driven.append(d)
    return srv, d


async def test_a_batch_moves_through_each_state_in_order(
    mock_server: Callable[..., Any], driven: list[Driven]
) -> None:
    _, d = await _start(
        mock_server,
        driven,
        "openai",
        batch_validating_s=0.1,
        batch_in_progress_s=0.2,
        batch_finalizing_s=0.1,
    )
    await d.submit(TEXTS)
    status = await d.wait()
    assert d.phases == ["validating", "in_progress", "finalizing", "completed"]
    assert status.counts == {"total": 6, "completed": 6, "failed": 0}


@pytest.mark.parametrize("kind", KINDS)
async def test_answers_equal_the_synchronous_answer_of_the_same_body(
    mock_server: Callable[..., Any], driven: list[Driven], kind: str
) -> None:
    srv, d = await _start(mock_server, driven, kind, cached_tokens=2, reasoning_tokens=3)
    await d.submit(TEXTS[:3])
    got = await d.results(await d.wait())
    for item in d.items:
        request = d.sync.build_request(
            d.endpoint, [{"role": "user", "content": TEXTS[int(item.call_id[4:])]}]
        )
        sync_answer = d.sync.parse_response(await d.send(request))
        assert isinstance(sync_answer, Completion)
        batch_answer = got[item.call_id]
        assert isinstance(batch_answer, Completion)
        assert (batch_answer.text, batch_answer.usage) == (sync_answer.text, sync_answer.usage)
    assert set(srv.stats()["batch"]["answered_by_body"].values()) == {1}


@pytest.mark.parametrize("kind", KINDS)
async def test_an_expired_batch_answers_its_first_half_and_the_rest_is_retryable(
    mock_server: Callable[..., Any], driven: list[Driven], kind: str
) -> None:
    _, d = await _start(mock_server, driven, kind, batch_faults=(BatchFault("expire"),))
    await d.submit(TEXTS)
    status = await d.wait()
    assert status.phase.value == "expired"
    got = await d.results(status)
    answered = [c for c in sorted(got) if isinstance(got[c], Completion)]
    assert answered == ["call0", "call1", "call2"]
    for call_id in ("call3", "call4", "call5"):
        error = got[call_id]
        assert isinstance(error, AttemptError) and error.action is ErrorAction.RETRY


@pytest.mark.parametrize("kind", ["openai", "gemini"])
async def test_a_failed_batch_says_why_and_answers_nothing(
    mock_server: Callable[..., Any], driven: list[Driven], kind: str
) -> None:
    _, d = await _start(mock_server, driven, kind, batch_faults=(BatchFault("fail"),))
    await d.submit(TEXTS)
    status = await d.wait()
    assert status.phase.value == "failed" and status.detail
    assert not any(isinstance(v, Completion) for v in (await d.results(status)).values())


@pytest.mark.parametrize("kind", KINDS)
async def test_a_cancelled_batch_keeps_what_it_processed_and_cancels_the_rest(
    mock_server: Callable[..., Any], driven: list[Driven], kind: str
) -> None:
    srv, d = await _start(mock_server, driven, kind, batch_in_progress_s=0.4)
    await d.submit(TEXTS)
    while (await d.status()).phase.value != "in_progress":
        pass
    cancel = {
        "openai": f"/v1/batches/{d.provider_id}/cancel",
        "anthropic": f"/v1/messages/batches/{d.provider_id}/cancel",
        "gemini": f"/v1beta/{d.provider_id}:cancel",
    }[kind]
    headers = dict(d.sync.build_request(d.endpoint, []).headers)
    answer = await d.send(HttpRequest("POST", srv.base_url + cancel, b"{}", headers))
    assert answer.status == 200, answer.body
    status = await d.wait()
    assert status.phase.value == "cancelled"
    got = await d.results(status)
    not_run = [c for c, v in got.items() if isinstance(v, AttemptError)]
    assert not_run and all(got[c].action is ErrorAction.RETRY for c in not_run)


@pytest.mark.parametrize("kind", KINDS)
async def test_per_line_errors_are_the_synchronous_error_shapes(
    mock_server: Callable[..., Any], driven: list[Driven], kind: str
) -> None:
    faults = (FaultRule("400", match="question 1"), FaultRule("503", match="question 2"))
    _, d = await _start(mock_server, driven, kind, batch_line_faults=faults)
    await d.submit(TEXTS[:4])
    got = await d.results(await d.wait())
    assert isinstance(got["call0"], Completion) and isinstance(got["call3"], Completion)
    bad, busy = got["call1"], got["call2"]
    assert isinstance(bad, AttemptError) and bad.action is ErrorAction.FAIL_CALL
    assert isinstance(busy, AttemptError) and busy.action is ErrorAction.RETRY


@pytest.mark.parametrize("kind", KINDS)
async def test_results_span_many_reads_and_a_dropped_download_is_cut_short(
    mock_server: Callable[..., Any], driven: list[Driven], kind: str
) -> None:
    srv, d = await _start(
        mock_server, driven, kind, batch_chunk_bytes=97, batch_faults=(BatchFault("download_drop"),)
    )
    await d.submit(TEXTS)
    status = await d.wait() if kind != "gemini" else None
    if status is None:  # Gemini's answers come with the ended batch: the poll is the download
        with pytest.raises(TransportFailure):
            await d.wait()
        status = await d.wait()
    else:
        with pytest.raises(TransportFailure):
            await d.results(status)
    got = await d.results(status)
    assert len(got) == 6 and all(isinstance(v, Completion) for v in got.values())
    stats = srv.stats()["batch"]
    assert stats["download_chunks"] > 2 * stats["downloads"] and stats["dropped"] == 1


async def test_a_failed_upload_is_an_error_answer(
    mock_server: Callable[..., Any], driven: list[Driven]
) -> None:
    _, d = await _start(mock_server, driven, "openai", batch_faults=(BatchFault("upload_error"),))
    payload = d.adapter.payload("k", [])
    upload = d.adapter.upload_request(d.endpoint, "k", payload)
    first = d.sync.parse_response(await d.send(upload))
    assert isinstance(first, AttemptError) and first.action is ErrorAction.RETRY
    assert first.error_class == "http_503"


@pytest.mark.parametrize("kind", KINDS)
async def test_a_batch_whose_create_answer_was_lost_exists_and_is_listed(
    mock_server: Callable[..., Any], driven: list[Driven], kind: str
) -> None:
    srv, d = await _start(mock_server, driven, kind, batch_faults=(BatchFault("create_lost"),))
    with pytest.raises(TransportFailure):
        await d.submit(TEXTS[:2], key="lost-key")
    listing = await d.send(d.adapter.list_request(d.endpoint, None))
    marker = Marker("lost-key", None, 2, 0.0, frozenset())
    found, _ = d.adapter.find(listing, marker)
    assert found is not None and srv.stats()["batch"]["created"] == 1


def test_batch_knobs_read_from_toml_shapes_and_bad_ones_are_refused() -> None:
    with pytest.raises(ConfigError, match="batch_faults"):
        MockConfig.from_mapping({"batch_faults": [{"kind": "melt"}]})
    with pytest.raises(ConfigError, match="HTTP status"):
        MockConfig.from_mapping({"batch_line_faults": [{"kind": "drop"}]})
    knobs = MockConfig.from_mapping({"batch_faults": [{"kind": "fail", "count": 2}]})
    assert knobs.batch_faults == (BatchFault("fail", 2),)
    assert orjson.loads(orjson.dumps(knobs.to_dict()))["batch_faults"] == [
        {"kind": "fail", "count": 2}
    ]
