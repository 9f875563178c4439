"""Reading a CTXGAP data directory: the shipped example, and one precise error per mistake."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ctxgap_kit import probe, view

from evaltally.benchmarks.ctxgap.data import InvalidProbe, load_dataset
from evaltally.errors import DataError


def test_example_set_loads_with_its_invalid_probes_listed() -> None:
    ds = load_dataset("example")
    assert ds.view_names == ("U", "T_full", "public", "actor")
    assert ds.task_ids == ("t1-ratelimit", "t2-flaky-dates", "t3-toml-config")
    assert len(ds.views) == 7 and len(ds.probes) == 31
    # 28 probes in 3 views, one probe in 2 (invalid in "public"), two probes invalid.
    assert (
        len(list(ds.planned())) == 28 * 3 + 2 + 12
    )  # + the actor view at the three cp1 checkpoints
    assert [(i.probe_id, i.view) for i in ds.invalid()] == [
        ("t1-cp2-latency", None),
        ("t2-final-duration", None),
        ("t3-final-warning", "public"),
    ]
    full = ds.views[("t1-ratelimit", "final")]["T_full"].text
    assert full.startswith("### checkpoint cp1") and "[agent note]" in full


def test_text_file_is_read_relative_to_the_directory(data_dir: Callable[..., Path]) -> None:
    d = data_dir(views=[{"task_id": "t1", "checkpoint": "c1", "view": "T", "text_file": "x.md"}])
    (d / "x.md").write_text("the full log\n", encoding="utf-8")
    assert load_dataset(d).views[("t1", "c1")]["T"].text == "the full log\n"


def test_invalid_views_leave_the_other_views_planned(data_dir: Callable[..., Path]) -> None:
    views = [view("t1", "c1", "U"), view("t1", "c1", "T")]
    probes = [probe("p1", invalid_views={"T": "redacted"}), probe("p2", invalid=None)]
    ds = load_dataset(data_dir(views=views, probes=probes))
    assert [(p.probe_id, v.name) for p, v in ds.planned()] == [
        ("p1", "U"),
        ("p2", "U"),
        ("p2", "T"),
    ]
    assert ds.invalid() == [InvalidProbe("p1", "T", "redacted")]


VIEWS_LINE_2 = "views.jsonl:2"
PROBES_LINE_2 = "probes.jsonl:2"

VIEW_ERRORS: list[tuple[dict[str, Any], str]] = [
    (
        {"task_id": "t1", "checkpoint": "c1", "view": "V"},
        "text: give exactly one of text and text_file",
    ),
    (
        {**view("t1", "c1", "V"), "text_file": "a.md"},
        "text: give exactly one of text and text_file",
    ),
    ({**view("t1", "c1", "V"), "colour": 1}, "colour: unknown field"),
    ({"task_id": "t1", "view": "V", "text": ""}, "checkpoint: missing"),
    (view("t1", "c1", "U"), "view: 'U' of task 't1' at checkpoint 'c1' is already given on line 1"),
    (view("t1", "c1", "A,B"), "view: must not contain ','"),
    (view("t1", " c1", "V"), "checkpoint: must not contain line breaks"),
    (view("", "c1", "V"), "task_id: must be a non-empty string"),
    ({**view("t1", "c1", "V"), "text": 3}, "text: must be a string"),
    (
        {"task_id": "t1", "checkpoint": "c1", "view": "V", "text_file": "nope.md"},
        "text_file: cannot read",
    ),
]


@pytest.mark.parametrize(("line", "message"), VIEW_ERRORS)
def test_view_errors_name_file_line_and_field(
    data_dir: Callable[..., Path], line: dict[str, Any], message: str
) -> None:
    d = data_dir(views=[view("t1", "c1", "U"), line])
    with pytest.raises(DataError) as err:
        load_dataset(d)
    assert f"{VIEWS_LINE_2}: {message}" in str(err.value)


PROBE_ERRORS: list[tuple[dict[str, Any], str]] = [
    (probe("p1"), "probe_id: 'p1' is already used on line 1"),
    (probe("p2", importance=4), "importance: must be an integer from 0 to 3, got 4"),
    (probe("p2", importance=True), "importance: must be an integer from 0 to 3, got True"),
    (probe("p2", importance="2"), "importance: must be an integer from 0 to 3, got '2'"),
    (probe("p2", task="t9"), "task_id: no task 't9' in the views file"),
    (probe("p2", checkpoint="c9"), "checkpoint: task 't1' has no checkpoint 'c9'"),
    (probe("p2", question="  "), "question: must not be empty"),
    (probe("p2", reference=None), "reference: must be a string"),
    (probe("p2", invalid=""), "invalid: must be a non-empty reason"),
    (probe("p2", invalid_views=["U"]), "invalid_views: must be an object"),
    (
        probe("p2", invalid_views={"X": "r"}),
        "invalid_views.X: the probe's checkpoint has no view 'X'",
    ),
    (
        probe("p2", invalid_views={"U": ""}),
        "invalid_views.U: the reason must be a non-empty string",
    ),
    (probe("p2", weight=1), "weight: unknown field"),
    ({k: v for k, v in probe("p2").items() if k != "category"}, "category: missing"),
    (
        probe("p2", atom_id="p1", category="other"),
        "category: atom 'p1' of task 't1' is in category 'decision' on line 1",
    ),
    (
        probe("p2", atom_id="p1", importance=3),
        "importance: atom 'p1' of task 't1' has importance 2 on line 1",
    ),
]


@pytest.mark.parametrize(("line", "message"), PROBE_ERRORS)
def test_probe_errors_name_file_line_and_field(
    data_dir: Callable[..., Path], line: dict[str, Any], message: str
) -> None:
    d = data_dir(probes=[probe("p1"), line])
    with pytest.raises(DataError) as err:
        load_dataset(d)
    assert f"{PROBES_LINE_2}: {message}" in str(err.value)


def test_atoms_are_scoped_by_task(data_dir: Callable[..., Path]) -> None:
    views = [view("t1", "c1", "U"), view("t2", "c1", "U")]
    probes = [probe("p1", atom_id="a"), probe("p2", task="t2", atom_id="a", importance=0)]
    assert len(load_dataset(data_dir(views=views, probes=probes)).probes) == 2


def test_file_level_errors(data_dir: Callable[..., Path], tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such directory"):
        load_dataset(tmp_path / "absent")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match=r"no views\.jsonl"):
        load_dataset(empty)
    d = data_dir(probes=[])
    with pytest.raises(DataError, match=r"probes\.jsonl: no probes"):
        load_dataset(d)
    (d / "probes.jsonl").write_text("[1]\n")
    with pytest.raises(DataError, match=r"probes.jsonl:1: each line of the probes file must be"):
        load_dataset(d)


ACTOR = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the flaky test."},
    {"role": "assistant", "content": "It fails after 23:00 UTC; I will inject now."},
]


def test_an_actor_view_is_the_actors_own_transcript(data_dir: Callable[..., Path]) -> None:
    actor = {"task_id": "t1", "checkpoint": "c1", "view": "actor", "messages": ACTOR}
    ds = load_dataset(data_dir(views=[view("t1", "c1", "U"), actor]))
    v = ds.views[("t1", "c1")]["actor"]
    assert v.messages == tuple(ACTOR) and "assistant: It fails after 23:00 UTC" in v.text
    assert [(p.probe_id, w.name) for p, w in ds.planned()] == [("p1", "U"), ("p1", "actor")]


@pytest.mark.parametrize(
    ("messages", "extra", "field", "reason"),
    [
        (ACTOR, {"text": "x"}, "messages", "exactly one of text, text_file and messages"),
        ([], {}, "messages", "non-empty list"),
        (ACTOR[:2], {}, "messages", "must end with the actor's own (assistant) turn"),
        ([*ACTOR, {"role": "tool", "content": "x"}], {}, "messages[3].role", "must be user"),
        ([ACTOR[1], ACTOR[0], ACTOR[2]], {}, "messages[1].role", "system only as the first"),
        ([{"role": "user"}, ACTOR[2]], {}, "messages[0]", "exactly role and content"),
        ([{"role": "user", "content": " "}, ACTOR[2]], {}, "messages[0].content", "non-empty"),
    ],
)
def test_actor_transcript_errors_name_file_line_and_field(
    data_dir: Callable[..., Path], messages: Any, extra: dict[str, Any], field: str, reason: str
) -> None:
    actor = {"task_id": "t1", "checkpoint": "c1", "view": "actor", "messages": messages, **extra}
    with pytest.raises(DataError) as err:
        load_dataset(data_dir(views=[view("t1", "c1", "U"), actor]))
    assert f"views.jsonl:2: {field}: " in str(err.value) and reason in str(err.value)
