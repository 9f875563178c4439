"""Verdicts supplied in a file instead of a judge model (human or external labels).

One JSON object per line: `probe_id`, `view`, `verdict` (0, 0.5 or 1), and optionally
`observer` (whose answers were labeled; default "-"), `labeler` (who labeled; default "labels")
and `note` (free text, kept out of every output). Each (observer, labeler) pair is one binding,
scored over the whole plan of the data: every valid (probe, view) without a label is `missing`
and counts 0 under intention-to-evaluate.
"""

from __future__ import annotations

from pathlib import Path

from evaltally.errors import DataError
from evaltally.jsonl import read_objects

from .data import Dataset, Probe
from .fields import Line
from .units import VERDICTS, Unit

DEFAULT_OBSERVER = "-"
DEFAULT_LABELER = "labels"

Key = tuple[str, str, str, str]
"""(observer, labeler, probe id, view)."""


def _verdict(line: Line) -> float:
    value = line.obj["verdict"]
    if isinstance(value, bool) or not isinstance(value, int | float) or value not in VERDICTS:
        raise line.error("verdict", f"must be 0, 0.5 or 1, got {value!r}")
    return float(value)


def _target(line: Line, dataset: Dataset, probes: dict[str, Probe]) -> tuple[Probe, str]:
    probe_id, view = line.name("probe_id"), line.name("view")
    probe = probes.get(probe_id)
    if probe is None:
        raise line.error("probe_id", f"no probe {probe_id!r} in the data ({dataset.source})")
    if probe.invalid is not None:
        raise line.error(
            "probe_id",
            f"probe {probe_id!r} is marked invalid ({probe.invalid}); its labels cannot be scored",
        )
    if view not in dataset.views[(probe.task_id, probe.checkpoint)]:
        raise line.error(
            "view",
            f"probe {probe_id!r} (task {probe.task_id!r}, checkpoint "
            f"{probe.checkpoint!r}) has no view {view!r}",
        )
    reason = probe.invalid_reason(view)
    if reason is not None:
        raise line.error("view", f"probe {probe_id!r} is invalid in view {view!r} ({reason})")
    return probe, view


def read_labels(path: Path, dataset: Dataset) -> dict[Key, float]:
    """Validated verdicts by (observer, labeler, probe, view), in file order."""
    probes = {p.probe_id: p for p in dataset.probes}
    verdicts: dict[Key, float] = {}
    first_line: dict[Key, int] = {}
    for lineno, obj in read_objects(path, "labels file"):
        line = Line(path, lineno, obj)
        line.only(("probe_id", "view", "verdict"), ("observer", "labeler", "note"))
        probe, view = _target(line, dataset, probes)
        observer = line.name("observer") if "observer" in obj else DEFAULT_OBSERVER
        labeler = line.name("labeler") if "labeler" in obj else DEFAULT_LABELER
        if "note" in obj:
            line.text("note", empty=True)
        verdict = _verdict(line)
        key = (observer, labeler, probe.probe_id, view)
        if key in first_line:
            raise line.error(
                "view",
                f"probe {probe.probe_id!r} in view {view!r} is already "
                f"labeled on line {first_line[key]}",
            )
        first_line[key] = lineno
        verdicts[key] = verdict
    if not verdicts:
        raise DataError(f"{path}: no labels")
    return verdicts


def units_from_labels(path: Path, dataset: Dataset) -> list[Unit]:
    """Every planned unit of every binding in the file; unlabeled units are `missing`."""
    verdicts = read_labels(path, dataset)
    bindings = dict.fromkeys((obs, lab) for obs, lab, _, _ in verdicts)
    units = []
    for models in bindings:
        for probe, view in dataset.planned():
            verdict = verdicts.get((*models, probe.probe_id, view.name))
            statuses = ("ok", "ok") if verdict is not None else ("unfinished", "unfinished")
            units.append(
                Unit.of(probe, view.name, models=models, statuses=statuses, verdict=verdict)
            )
    return units
