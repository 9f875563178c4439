"""The CTXGAP input: a directory with `views.jsonl` and `probes.jsonl` (docs/ctxgap.md).

- `views.jsonl`: one line per (task, checkpoint, view): what an observer of that view reads.
  The text is inline (`text`) or in a UTF-8 file (`text_file`, relative to the directory); an
  actor view gives the actor's own transcript instead (`messages`, transcript.py).
  Tasks, checkpoints and views exist because a view line names them; their order is the order
  of first appearance, which is also the default order of views in reports.
- `probes.jsonl`: one line per probe (question, reference answer, category, importance of the
  underlying atomic fact). A probe may be invalid as a whole (`invalid`: reason) or for some
  views only (`invalid_views`: view -> reason); invalid probes are listed, never scored.

Every problem is a `DataError` naming the file, the line, the field and the reason.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from evaltally.benchmarks.data_refs import RefusedFile, read_referenced
from evaltally.errors import DataError
from evaltally.jsonl import read_objects
from evaltally.records import Message, content_hash

from .fields import Line
from .transcript import transcript, transcript_text

#: The shipped example set, addressed as `example` on the command line.
EXAMPLE = "example"
IMPORTANCE_MAX = 3
#: Facts of at least this importance are "important atoms" in the category weights.
IMPORTANT = 2

VIEW_FIELDS = ("task_id", "checkpoint", "view")
PROBE_FIELDS = (
    "probe_id",
    "task_id",
    "checkpoint",
    "category",
    "question",
    "reference",
    "importance",
)
PROBE_OPTIONAL = ("atom_id", "invalid", "invalid_views")


@dataclass(frozen=True, slots=True)
class View:
    task_id: str
    checkpoint: str
    name: str
    text: str
    messages: tuple[Message, ...] | None = None
    """An actor view (transcript.py): the actor's own messages; `text` is their text."""


@dataclass(frozen=True, slots=True)
class Probe:
    probe_id: str
    task_id: str
    checkpoint: str
    category: str
    question: str
    reference: str
    importance: int
    atom_id: str
    """The atomic fact asked about; probes of one task sharing it count as one atom."""
    invalid: str | None = None
    invalid_views: Mapping[str, str] | None = None

    def invalid_reason(self, view: str) -> str | None:
        """Why this probe is not scored in `view` (None: it is scored)."""
        return self.invalid or (self.invalid_views or {}).get(view)


@dataclass(frozen=True, slots=True)
class InvalidProbe:
    """A probe (or one view of it) left out of scoring, listed in every report."""

    probe_id: str
    view: str | None
    """None: the whole probe is invalid."""
    reason: str


@dataclass(frozen=True)
class Dataset:
    source: str
    views: Mapping[tuple[str, str], Mapping[str, View]]
    """(task_id, checkpoint) -> view name -> view, in order of first appearance."""
    probes: tuple[Probe, ...]
    files: tuple[Path, ...] = ()
    """Every file the data was read from (views, probes, view text files), in reading order:
    a run records each with its SHA-256."""

    @property
    def view_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for by_name in self.views.values() for name in by_name))

    @property
    def task_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(task for task, _ in self.views))

    def content_hash(self) -> str:
        """sha256 of the canonical JSON of every view (with its text) and every probe: names
        the data a report was computed from, whichever files the texts were read from."""
        views = [
            [v.task_id, v.checkpoint, v.name, v.text]
            for at in self.views.values()
            for v in at.values()
        ]
        probes = [
            [
                p.probe_id,
                p.task_id,
                p.checkpoint,
                p.category,
                p.question,
                p.reference,
                p.importance,
                p.atom_id,
                p.invalid,
                p.invalid_views,
            ]
            for p in self.probes
        ]
        return content_hash({"views": views, "probes": probes})

    def planned(self) -> Iterator[tuple[Probe, View]]:
        """Every (probe, view) an observer answers: valid probes x their checkpoint's views."""
        for probe in self.probes:
            for name, view in self.views[(probe.task_id, probe.checkpoint)].items():
                if probe.invalid_reason(name) is None:
                    yield probe, view

    def invalid(self) -> list[InvalidProbe]:
        out = []
        for p in self.probes:
            if p.invalid is not None:
                out.append(InvalidProbe(p.probe_id, None, p.invalid))
                continue
            for view, reason in (p.invalid_views or {}).items():
                out.append(InvalidProbe(p.probe_id, view, reason))
        return out


def example_dir() -> Path:
    return Path(str(resources.files("evaltally") / "data" / "ctxgap_example"))


def resolve(source: str | Path) -> Path:
    """A data directory, or the shipped example for `example`."""
    return example_dir() if str(source) == EXAMPLE else Path(source)


def _input_file(directory: Path, stem: str) -> Path:
    for name in (f"{stem}.jsonl", f"{stem}.jsonl.gz"):
        if (directory / name).is_file():
            return directory / name
    if not directory.is_dir():
        raise DataError(f"{directory}: not a CTXGAP data directory (no such directory)")
    raise DataError(
        f"{directory}: no {stem}.jsonl (a CTXGAP data directory holds "
        "views.jsonl and probes.jsonl; see docs/ctxgap.md)"
    )


def load_dataset(source: str | Path) -> Dataset:
    directory = resolve(source)
    views_file, probes_file = _input_file(directory, "views"), _input_file(directory, "probes")
    text_files: list[Path] = []
    views = _load_views(views_file, text_files)
    probes = _load_probes(probes_file, views)
    files = (views_file, *dict.fromkeys(text_files), probes_file)
    return Dataset(str(source), views, probes, files)


def _view_text(line: Line, text_files: list[Path]) -> str:
    has_text, has_file = "text" in line.obj, "text_file" in line.obj
    if has_text == has_file:
        raise line.error("text", "give exactly one of text and text_file")
    if has_text:
        return line.text("text", empty=True)
    rel = line.name("text_file")
    try:
        text = read_referenced(line.path.parent, rel)
    except RefusedFile as exc:
        raise line.error("text_file", str(exc)) from None
    text_files.append(line.path.parent / rel)
    return text


def _load_views(path: Path, text_files: list[Path]) -> dict[tuple[str, str], dict[str, View]]:
    views: dict[tuple[str, str], dict[str, View]] = {}
    first_line: dict[tuple[str, str, str], int] = {}
    for lineno, obj in read_objects(path, "views file"):
        line = Line(path, lineno, obj)
        line.only(VIEW_FIELDS, ("text", "text_file", "messages"))
        task, checkpoint = line.name("task_id"), line.name("checkpoint")
        # Commas separate view names on the command line (--gap U,T_full).
        name = line.name("view", forbid=",")
        key = (task, checkpoint, name)
        if key in first_line:
            raise line.error(
                "view",
                f"{name!r} of task {task!r} at checkpoint {checkpoint!r} "
                f"is already given on line {first_line[key]}",
            )
        first_line[key] = lineno
        messages = transcript(line)
        text = transcript_text(messages) if messages else _view_text(line, text_files)
        views.setdefault((task, checkpoint), {})[name] = View(
            task, checkpoint, name, text, messages
        )
    if not views:
        raise DataError(f"{path}: no views")
    return views


def _load_probes(
    path: Path, views: Mapping[tuple[str, str], Mapping[str, View]]
) -> tuple[Probe, ...]:
    probes: list[Probe] = []
    first_line: dict[str, int] = {}
    atoms: dict[tuple[str, str], tuple[int, str, int]] = {}
    for lineno, obj in read_objects(path, "probes file"):
        line = Line(path, lineno, obj)
        probe = _probe(line, views)
        if probe.probe_id in first_line:
            raise line.error(
                "probe_id",
                f"{probe.probe_id!r} is already used on line {first_line[probe.probe_id]}",
            )
        first_line[probe.probe_id] = lineno
        _check_atom(line, probe, atoms)
        probes.append(probe)
    if not probes:
        raise DataError(f"{path}: no probes")
    return tuple(probes)


def _probe(line: Line, views: Mapping[tuple[str, str], Mapping[str, View]]) -> Probe:
    line.only(PROBE_FIELDS, PROBE_OPTIONAL)
    probe_id, task = line.name("probe_id"), line.name("task_id")
    checkpoint = line.name("checkpoint")
    if not any(t == task for t, _ in views):
        raise line.error("task_id", f"no task {task!r} in the views file")
    at = views.get((task, checkpoint))
    if at is None:
        raise line.error(
            "checkpoint", f"task {task!r} has no checkpoint {checkpoint!r} in the views file"
        )
    atom = line.name("atom_id") if "atom_id" in line.obj else probe_id
    return Probe(
        probe_id=probe_id,
        task_id=task,
        checkpoint=checkpoint,
        category=line.name("category"),
        question=line.text("question"),
        reference=line.text("reference"),
        importance=line.integer("importance", 0, IMPORTANCE_MAX),
        atom_id=atom,
        invalid=line.reason("invalid"),
        invalid_views=_invalid_views(line, at),
    )


def _invalid_views(line: Line, at: Mapping[str, View]) -> dict[str, str] | None:
    value = line.obj.get("invalid_views")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise line.error("invalid_views", "must be an object: view name -> reason")
    for view, reason in value.items():
        field = f"invalid_views.{view}"
        if view not in at:
            raise line.error(field, f"the probe's checkpoint has no view {view!r}")
        if not isinstance(reason, str) or not reason.strip():
            raise line.error(field, "the reason must be a non-empty string")
    return dict(value)


def _check_atom(
    line: Line, probe: Probe, atoms: dict[tuple[str, str], tuple[int, str, int]]
) -> None:
    """Probes of one atomic fact must agree on what the fact is (its category and importance)."""
    key = (probe.task_id, probe.atom_id)
    seen = atoms.setdefault(key, (line.lineno, probe.category, probe.importance))
    first, category, importance = seen
    if category != probe.category:
        raise line.error(
            "category",
            f"atom {probe.atom_id!r} of task {probe.task_id!r} is in "
            f"category {category!r} on line {first}",
        )
    if importance != probe.importance:
        raise line.error(
            "importance",
            f"atom {probe.atom_id!r} of task {probe.task_id!r} has "
            f"importance {importance} on line {first}",
        )
