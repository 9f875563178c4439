"""A call waiting out its own retry lends its slot (issue 29 item 1: a transient server error
delays its own request, not the lane), while a request still never leaves without a ticket of
the lane and an outage stays the breaker's. Whole sessions through a scripted provider that
answers each request a virtual second after it arrives, on an EventClock (scripted_kit.py):
concurrent waits overlap as in real time, so the tests ask when the other chains were answered
while one call waited."""

from __future__ import annotations

from pathlib import Path

from scripted_kit import EventClock, Provider, answer, run

from evaltally.adapters.base import HttpRequest, HttpResponse

CALLS = 11
LATENCY_S = 1.0


def _first_request_refused(retry_after_s: float) -> Provider:
    """The provider's very first request is answered 503 with `retry_after_s`; the rest ok."""

    def script(request: HttpRequest, n: int) -> HttpResponse:
        if len(provider.log) == 1:
            return answer(request, 503, **{"retry-after": f"{retry_after_s:g}"})
        return answer(request)

    provider = Provider(EventClock(), script, LATENCY_S)
    return provider


def _refused(provider: Provider) -> str:
    return next(q for _, q, status in provider.answers if status == 503)


async def test_the_other_chains_go_on_at_full_concurrency_while_one_call_waits(
    tmp_path: Path,
) -> None:
    clean = Provider(EventClock(), lambda request, n: answer(request), LATENCY_S)
    (tmp_path / "clean").mkdir()
    await run(tmp_path / "clean", clean, CALLS, concurrency=2)
    clean_end = max(t for t, _, _ in clean.answers)
    # 11 calls, 2 at a time, a second each: 6 rounds.
    assert 6 * LATENCY_S <= clean_end < 6.5 * LATENCY_S

    provider = _first_request_refused(10.0)
    (tmp_path / "refused").mkdir()
    result, _ = await run(tmp_path / "refused", provider, CALLS, concurrency=2)
    assert result.complete and result.lanes["m1"].stats.ok == CALLS
    refused = _refused(provider)
    others_end = max(t for t, q, _ in provider.answers if q != refused)
    # The other ten were answered within the time all eleven take without the error (before,
    # the waiting call held one of the two slots: one at a time, 10 s).
    assert others_end <= clean_end
    failed_at, retried_at = provider.times(refused)
    assert retried_at - failed_at >= 10.0 + LATENCY_S  # its own Retry-After, honoured
    assert provider.most_held == 2  # never more in flight than `concurrency`


async def test_a_call_back_from_its_wait_takes_its_turn_for_a_ticket(tmp_path: Path) -> None:
    # The call's wait ends while both places are taken by chains the lent slot started: it
    # waits for the next answer instead of making a third request in flight.
    provider = _first_request_refused(2.5)
    result, _ = await run(tmp_path, provider, CALLS, concurrency=2)
    assert result.complete and result.lanes["m1"].stats.ok == CALLS
    assert provider.most_held == 2
    failed_at, retried_at = provider.times(_refused(provider))
    answered_meanwhile = [t for t, _, _ in provider.answers if failed_at < t <= retried_at]
    assert retried_at - failed_at >= 2.5 + LATENCY_S and retried_at in answered_meanwhile


async def test_the_calls_of_a_chain_still_never_overlap(tmp_path: Path) -> None:
    # Six chains of three turns, two slots: the refused first turn's chain waits out its
    # Retry-After, the lent slot drives another chain, and every chain's turns go one after
    # the other's answer.
    provider = _first_request_refused(10.0)
    result, _ = await run(tmp_path, provider, 6, turns=3, concurrency=2)
    assert result.complete and result.lanes["m1"].stats.ok == 18
    answered = {q: t for t, q, status in provider.answers if status == 200}
    for i in range(6):
        for turn in (1, 2):
            (sent,) = provider.times(f"chain {i} turn {turn}")
            assert sent >= answered[f"chain {i} turn {turn - 1}"]
    refused = _refused(provider)
    chain = refused.removesuffix(" turn 0")
    # The other five chains end before the refused one is retried: one slot drives three of
    # them (9 s), the lent one two (before, one slot drove all five: 15 s).
    others_end = max(t for q, t in answered.items() if not q.startswith(chain + " "))
    assert others_end <= 9 * LATENCY_S + 0.5 < provider.times(refused)[1]


async def test_an_outage_costs_the_breaker_its_usual_few_requests(tmp_path: Path) -> None:
    # A 60 s total outage against 8 in flight and a breaker opening at 8 failures in a row,
    # each failed call told to come back in 5 s. The answers come back spread over a second,
    # so a failed call's wait begins while the others are still out: had every one of them
    # lent its slot, each would have sent a new chain's first request before the breaker
    # opened (up to 7 more). Only a failure that is the lane's only one in a row lends.
    outage_s, threshold, cooldown_s = 60.0, 8, 20.0

    def script(request: HttpRequest, n: int) -> HttpResponse:
        if provider.clock.now < outage_s:
            return answer(request, 503, **{"retry-after": "5"})
        return answer(request)

    provider = Provider(EventClock(), script, lambda arrival: 1.0 + 0.1 * (arrival % 8))
    result, _ = await run(
        tmp_path,
        provider,
        40,
        concurrency=8,
        breaker_threshold=threshold,
        breaker_cooldown_s=cooldown_s,
        max_attempts=20,
    )
    lane = result.lanes["m1"]
    assert result.complete and lane.stats.ok == 40 and lane.breaker.times_opened >= 1
    in_outage = sum(1 for t, _ in provider.log if t < outage_s)
    # The first wave and one probe per cool-down, as without lending (8 + 2 here), plus the one
    # chain the first failure's slot started: 11, "about ten".
    assert in_outage <= threshold + 1 + int(outage_s // cooldown_s)
    assert provider.most_held <= 8
