"""The episode format: the shipped example set loads, and every malformed line is refused with
an error naming the file, the line, the episode, the field and the reason."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from evaltally.benchmarks.scae.episodes import example_path, load_episodes
from evaltally.errors import DataError


def good(**changes: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": "e1",
        "repository": "acme/x",
        "task": "fix it",
        "gold": ["src/a.py", "src/b.py"],
        "outcome": {"success": False, "recall": 0.5, "answer": ["src/a.py", "docs/x.md"]},
        "steps": [
            {"tool": "search", "target": "thing", "output": "src/a.py:3: thing"},
            {"tool": "submit", "target": None, "output": ""},
        ],
    }
    rec.update(changes)
    return rec


def write(tmp_path: Path, *records: Any, name: str = "episodes.jsonl") -> Path:
    path = tmp_path / name
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_example_set_loads_with_its_documented_shape() -> None:
    episodes = load_episodes(example_path())
    assert len(episodes) == 16
    assert len({e.repository for e in episodes}) == 4
    assert sum(e.total_steps for e in episodes) == 93
    assert sum(not e.outcome.success for e in episodes) == 5
    assert min(e.total_steps for e in episodes) == 1
    assert max(e.total_steps for e in episodes) == 20


def test_a_valid_episode_reads_into_typed_fields(tmp_path: Path) -> None:
    rec = good(gold=["./src/a.py", "src/b.py"], meta={"agent": "x"})
    rec["steps"][0]["mentions"] = ["src/a.py"]
    (e,) = load_episodes(write(tmp_path, "# a comment line", rec))
    assert e.id == "e1" and e.line == 2 and e.gold == ("src/a.py", "src/b.py")
    assert e.steps[0].mentions == ("src/a.py",) and e.steps[1].target is None
    assert e.outcome.recall == 0.5 and e.outcome.answer == ("src/a.py", "docs/x.md")
    assert e.meta == {"agent": "x"}


def test_gzipped_episode_files_are_read(tmp_path: Path) -> None:
    path = tmp_path / "episodes.jsonl.gz"
    path.write_bytes(gzip.compress((json.dumps(good()) + "\n").encode()))
    assert [e.id for e in load_episodes(path)] == ["e1"]


def _step(**changes: Any) -> dict[str, Any]:
    step = {"tool": "read", "target": "src/a.py", "output": "x"}
    step.update(changes)
    return step


def _without(rec: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in rec.items() if k != key}


BAD = [
    (good(extra=1), "field extra: unknown key"),
    (_without(good(), "gold"), "field gold: missing"),
    (good(id=""), "episode ?: field id: must be a non-empty string"),
    (good(task=3), "field task: must be a non-empty string"),
    (good(gold=[]), "field gold: must be a non-empty list"),
    (good(gold=["src/a.py", "./src/a.py"]), "field gold[1]: 'src/a.py' is listed twice"),
    (good(steps=[]), "field steps: must be a non-empty list"),
    (good(steps=["read"]), "field steps[0]: must be an object, got str"),
    (good(steps=[_step(tool="")]), "field steps[0].tool: must be a non-empty string"),
    (good(steps=[{"tool": "read", "output": ""}]), "field steps[0].target: missing"),
    (good(steps=[_step(target=7)]), "field steps[0].target: must be a non-empty string or null"),
    (good(steps=[_step(output=None)]), "field steps[0].output: must be a string"),
    (good(steps=[_step(mentions="src/a.py")]), "field steps[0].mentions: must be a list"),
    (good(steps=[_step(color="red")]), "field steps[0].color: unknown key"),
    (good(outcome=True), "field outcome: must be an object"),
    (good(outcome={"recall": 1.0}), "field outcome.success: must be true or false"),
    (good(outcome={"success": True, "recall": 1.5}), "field outcome.recall: must be in [0, 1]"),
    (good(outcome={"success": True, "recall": 0.5}), "0.5 contradicts success = True"),
    (
        good(outcome={"success": True, "answer": ["src/a.py"]}),
        "field outcome.success: True contradicts the answer (1 of 2 gold objects named)",
    ),
    (
        good(outcome={"success": False, "recall": 0.0, "answer": ["src/a.py"]}),
        "field outcome.recall: 0.0 != 1/2 gold objects in the answer",
    ),
    (good(meta=[]), "field meta: must be an object"),
]


@pytest.mark.parametrize(("record", "message"), BAD)
def test_a_malformed_episode_names_file_line_field_and_reason(
    tmp_path: Path, record: dict[str, Any], message: str
) -> None:
    path = write(tmp_path, good(id="first"), record)
    with pytest.raises(DataError) as err:
        load_episodes(path)
    text = str(err.value)
    assert text.startswith(f"{path}:2: episode ")
    assert message in text


def test_file_level_problems_are_named(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file"):
        load_episodes(tmp_path / "missing.jsonl")
    with pytest.raises(DataError, match="holds no episode records"):
        load_episodes(write(tmp_path, "# only a comment"))
    with pytest.raises(DataError, match=r":2: not valid JSON"):
        load_episodes(write(tmp_path, good(), "{oops"))
    with pytest.raises(DataError, match=r":1: an episode must be a JSON object"):
        load_episodes(write(tmp_path, "[1, 2]"))
    with pytest.raises(DataError, match=r":3: episode e1: field id: duplicate of line 1"):
        load_episodes(write(tmp_path, good(), good(id="e2"), good()))
