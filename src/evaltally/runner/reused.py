"""Requests recorded by another run that a benchmark continues, checked before anything is sent.

A fork (benchmarks/fork) renders its replays from a parent run's recorded answers. The parent's
steps up to the fork step must still render, through the parent model's adapter, to the very
request bodies whose hashes the parent recorded; otherwise the "recorded prefix" is not the one
the parent's model saw, and the fork would quietly continue a different chain. The check needs
no credentials for the APIs whose key travels in a header (every one but Bedrock's signed
requests).
"""

from __future__ import annotations

from collections.abc import Mapping

from evaltally.benchmarks.base import Benchmark, ReusedRequest
from evaltally.errors import PlanMismatchError
from evaltally.ledger import request_hash
from evaltally.runner.call import LaneUnit, request_body
from evaltally.runner.lane import Lane
from evaltally.runner.units import build_unit


def check_reused(benchmarks: Mapping[str, Benchmark]) -> int:
    """Re-build every reused request of every benchmark; returns how many were checked."""
    units: dict[str, LaneUnit] = {}
    checked = 0
    for bench in benchmarks.values():
        try:
            requests = list(bench.reused_requests())
        except PlanMismatchError:
            raise
        except Exception as exc:  # the parent no longer renders at all: same verdict
            raise PlanMismatchError(
                f"benchmark {bench.label!r}: the recorded requests it continues cannot be "
                f"rendered again ({exc}); nothing was sent"
            ) from exc
        for req in requests:
            unit = units.get(req.model.key)
            if unit is None:
                unit = units[req.model.key] = _unit(req)
            if request_hash(request_body(unit, req.messages)) != req.request_hash:
                raise PlanMismatchError(
                    f"benchmark {bench.label!r}: {req.where} no longer renders to the request "
                    "the run recorded (its data, prompt version or model parameters changed "
                    "since), so its recorded prefix cannot be reused; nothing was sent"
                )
            checked += 1
    return checked


def _unit(req: ReusedRequest) -> LaneUnit:
    return build_unit(req.model, None, Lane(req.model.key, req.model.limits))
