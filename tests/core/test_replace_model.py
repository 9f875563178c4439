"""`tally run CONFIG --replace-model KEY`: one model's config was wrong (a typo in its id); its
recorded calls are superseded (kept in the ledger, counted nowhere), its new calls run, and
every other model's answers are kept, not sent again. Against the mock provider, through the
real command line."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from evaltally.ledger.browse import plan_cells, run_progress
from evaltally.ledger.files import connect_ro, ledger_path
from kinds_kit import tally_kinds
from testkit import kill_run_when, mock_model, tally, write_config, write_items

ONE_AT_A_TIME = "concurrency = 1\nbackoff_initial_s = 0.05\nbackoff_max_s = 0.5"


def _start(tmp_path: Path, mock_process: Any, items: int, *mock_args: str) -> tuple[Any, Path]:
    """A mock serving m1-model and m2-model, and a config whose m2 asks for `m2-modle`."""
    (tmp_path / "mock.toml").write_text('models = ["m1-model", "m2-model"]\n')
    mock = mock_process("--config", str(tmp_path / "mock.toml"), *mock_args)
    write_items(tmp_path / "items.jsonl", items)
    config = write_config(tmp_path, mock.base_url, models=("m1", "m2"), limits=ONE_AT_A_TIME)
    config.write_text(config.read_text().replace('"m2-model"', '"m2-modle"'))
    return mock, config


def _status(run_dir: Path) -> dict[str, Any]:
    result = tally("status", str(run_dir), "--json")
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = orjson.loads(result.stdout)
    return data


def _export(run_dir: Path) -> list[dict[str, Any]]:
    out = run_dir.parent / "export.jsonl"
    result = tally("export", str(run_dir), "-o", str(out), "--force")
    assert result.returncode == 0, result.stderr
    return [orjson.loads(line) for line in out.read_text().splitlines()]


def _advice(stdout: str) -> list[str]:
    """The command a stopped lane's line tells the user to run, as its arguments."""
    found = re.search(r"then `tally (run \S+ --replace-model \S+)`", stdout)
    assert found is not None, stdout
    return found.group(1).split()


def test_following_the_lane_stop_advice_replaces_the_model_and_keeps_the_others(
    tmp_path: Path, mock_process: Any
) -> None:
    mock, config = _start(tmp_path, mock_process, 6)
    run_dir = tmp_path / "runs" / "t"
    first = tally("run", str(config))
    assert first.returncode == 3, first.stderr
    assert mock.stats()["by_model"] == {"m1-model": 6}  # m2's lane stopped after its 404
    assert mock.stats()["total"] == 7
    advice = _advice(first.stdout)
    assert advice == ["run", str(config), "--replace-model", "m2"]
    before = {r["call_id"] for r in _export(run_dir) if r["model"] == "m2"}

    config.write_text(config.read_text().replace('"m2-modle"', '"m2-model"'))
    refused = tally("run", str(config))
    assert refused.returncode == 2
    assert "models[m2].model: 'm2-modle' -> 'm2-model'" in refused.stderr
    assert f"`tally run {config} --replace-model m2`" in refused.stderr
    assert mock.stats()["total"] == 7

    replaced = tally(*advice)
    assert replaced.returncode == 0, replaced.stderr
    assert "m2: 6 recorded call(s) superseded" in replaced.stdout
    # m1's answers were kept: the mock saw none of its calls again.
    assert mock.stats()["by_model"] == {"m1-model": 6, "m2-model": 6}

    status = _status(run_dir)
    assert status["overall"]["planned"] == 12 and status["overall"]["ok"] == 12
    assert status["by_model"]["m2"]["planned"] == 6
    assert status["by_model"]["m2"]["failed"] == status["by_model"]["m2"]["blocked"] == 0
    (sup,) = status["superseded"]
    assert (sup["model"], sup["calls"], sup["chains"]) == ("m2", 6, 6)
    assert sup["changes"] == ["models[m2].model: 'm2-modle' -> 'm2-model'"]
    assert "--replace-model m2" in sup["command"]
    shown = tally("status", str(run_dir))
    assert "superseded: 6 call(s) of m2 at " in shown.stdout

    rows = _export(run_dir)
    assert len(rows) == 12 and {r["status"] for r in rows} == {"ok"}
    assert not before & {r["call_id"] for r in rows}  # no superseded call is exported
    run_meta = orjson.loads((run_dir.parent / "export.jsonl.meta.json").read_text())
    assert [(s["model"], s["calls"]) for s in run_meta["superseded"]] == [("m2", 6)]

    conn = connect_ro(ledger_path(run_dir))
    try:  # what `tally view` counts
        assert run_progress(conn) == (12, 12)
        assert sorted(plan_cells(conn)) == [("m1", "prompts", ""), ("m2", "prompts", "")]
        # The old calls are still in the ledger, with their outcomes: nothing was deleted.
        (planned,) = conn.execute("SELECT count(*) FROM planned").fetchone()
        assert planned == 18
    finally:
        conn.close()
    verified = tally("verify", str(run_dir))
    assert verified.returncode == 0, verified.stderr
    assert tally("report", str(run_dir)).returncode == 0  # graded from the run's export
    report = orjson.loads((run_dir / "report.json").read_text())
    groups = {g["model"]: g for g in report["sections"]["prompts"]["groups"]}
    assert (groups["m2"]["calls"], groups["m2"]["ok"], groups["m2"]["failed"]) == (6, 6, 0)

    again = tally(*advice)  # the same command again: nothing left to replace, nothing sent
    assert again.returncode == 0, again.stderr
    assert mock.stats()["total"] == 13


def test_a_resumed_run_s_advice_names_the_config_it_cannot_know(
    tmp_path: Path, mock_process: Any
) -> None:
    """`tally resume` reads the run's own copy, which is not the file to edit: the advice
    names CONFIG and says which file that is."""
    _, config = _start(tmp_path, mock_process, 2)
    assert tally("run", str(config)).returncode == 3
    resumed = tally("resume", str(tmp_path / "runs" / "t"))
    assert resumed.returncode == 3
    assert "then `tally run CONFIG --replace-model m2`" in resumed.stdout
    assert "CONFIG: the config file the run was started from" in resumed.stdout


def test_any_other_change_is_still_refused_with_the_keys_named(
    tmp_path: Path, mock_process: Any
) -> None:
    mock, config = _start(tmp_path, mock_process, 3)
    run_dir = tmp_path / "runs" / "t"
    assert tally("run", str(config)).returncode == 3
    copy = (run_dir / "config.toml").read_text()
    sent = mock.stats()["total"]

    text = config.read_text().replace('"m2-modle"', '"m2-model"')
    # m1's temperature is the first in the file.
    config.write_text(text.replace("temperature = 0.0", "temperature = 0.5", 1))
    refused = tally("run", str(config), "--replace-model", "m2")
    assert refused.returncode == 2
    assert "also drops 3 recorded call(s) of m1" in refused.stderr
    assert "models[m1].params: {'temperature': 0.0" in refused.stderr
    assert mock.stats()["total"] == sent
    assert (run_dir / "config.toml").read_text() == copy
    assert _status(run_dir)["superseded"] == []

    unknown = tally("run", str(config), "--replace-model", "m3")
    assert unknown.returncode == 2
    assert "--replace-model m3: the config has no model with key 'm3' (models: m1, m2)" in (
        unknown.stderr
    )
    assert tally("verify", str(run_dir)).returncode == 0


def test_a_superseded_call_never_comes_back(tmp_path: Path, mock_process: Any) -> None:
    mock, config = _start(tmp_path, mock_process, 3)
    run_dir = tmp_path / "runs" / "t"
    assert tally("run", str(config)).returncode == 3
    typo = config.read_text()
    config.write_text(typo.replace('"m2-modle"', '"m2-model"'))
    assert tally("run", str(config), "--replace-model", "m2").returncode == 0
    sent = mock.stats()["total"]

    config.write_text(typo)  # back to the config whose calls were superseded
    refused = tally("run", str(config), "--replace-model", "m2")
    assert refused.returncode == 2
    assert "a superseded call never comes back" in refused.stderr
    assert mock.stats()["total"] == sent
    assert _status(run_dir)["overall"]["ok"] == 6


def test_a_kill_during_the_replacement_then_resume_is_exact(
    tmp_path: Path, mock_process: Any
) -> None:
    mock, config = _start(tmp_path, mock_process, 8, "--latency-ms", "150")
    run_dir = tmp_path / "runs" / "t"
    assert tally("run", str(config)).returncode == 3
    config.write_text(config.read_text().replace('"m2-modle"', '"m2-model"'))

    def m2_answered_some() -> bool:
        return int(mock.stats()["by_model"].get("m2-model", 0)) >= 3

    kill_run_when(config, m2_answered_some, options=("--replace-model", "m2"))
    m2_sent = mock.stats()["by_model"]["m2-model"]
    assert 3 <= m2_sent < 8
    resumed = tally("resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    by_model = mock.stats()["by_model"]
    assert by_model["m1-model"] == 8
    # Only the request in flight at the kill may have been sent again.
    assert 8 <= by_model["m2-model"] <= 9

    status = _status(run_dir)
    assert status["overall"]["planned"] == status["overall"]["ok"] == 16
    assert [(s["model"], s["calls"]) for s in status["superseded"]] == [("m2", 8)]
    rows = _export(run_dir)
    assert len(rows) == 16 and {r["status"] for r in rows} == {"ok"}
    with sqlite3.connect(ledger_path(run_dir)) as conn:
        finals = conn.execute(
            "SELECT count(*), count(DISTINCT call_id) FROM outcomes WHERE status = 'ok'"
        ).fetchone()
    assert finals == (16, 16)  # one answer per live call, none for the superseded ones
    assert tally("verify", str(run_dir)).returncode == 0


def test_a_run_killed_before_its_config_copy_was_updated_resumes_from_the_ledger(
    tmp_path: Path, mock_process: Any
) -> None:
    """The new plan and its config commit together in the ledger; the config, staged beside
    the copy before, replaces the copy after. A kill in between leaves the old copy and the
    staged file: resume follows the staged config, which the ledger shows committed."""
    mock, config = _start(tmp_path, mock_process, 4)
    run_dir = tmp_path / "runs" / "t"
    assert tally("run", str(config)).returncode == 3
    old_copy = (run_dir / "config.toml").read_text()
    config.write_text(config.read_text().replace('"m2-modle"', '"m2-model"'))
    assert tally("run", str(config), "--replace-model", "m2").returncode == 0
    assert not (run_dir / "config.toml.next").exists()
    sent = mock.stats()["total"]

    # As if killed after the commit, before the copy was replaced.
    (run_dir / "config.toml.next").write_text((run_dir / "config.toml").read_text())
    (run_dir / "config.toml").write_text(old_copy)
    resumed = tally("resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    assert mock.stats()["total"] == sent
    assert '"m2-model"' in (run_dir / "config.toml").read_text()
    assert not (run_dir / "config.toml.next").exists()
    assert _status(run_dir)["overall"]["ok"] == 8

    # A staged config the ledger never committed (killed before the commit) is ignored.
    (run_dir / "config.toml.next").write_text(old_copy.replace("max_tokens = 64", "max_tokens = 9"))
    assert tally("resume", str(run_dir)).returncode == 0
    assert mock.stats()["total"] == sent
    assert "max_tokens = 9" not in (run_dir / "config.toml").read_text()


def test_a_chain_binding_the_replaced_model_with_another_is_replaced_whole(
    tmp_path: Path, mock_process: Any
) -> None:
    """Observer then judge: the judge's id was wrong. Its chains are superseded whole, so the
    observer's step of each is sent again in the new chain (docs/ledger.md)."""
    (tmp_path / "judge.toml").write_text('models = ["jud-model"]\n')
    observers = mock_process()
    judge = mock_process("--config", str(tmp_path / "judge.toml"))
    config = tmp_path / "roles.toml"
    text = (
        '[run]\nname = "roles"\nruns_dir = "runs"\n\n'
        + mock_model("obs", observers.base_url, "concurrency = 1\n")
        + mock_model("jud", judge.base_url, "concurrency = 1\n")
        + '[[benchmarks]]\nkind = "observe_judge"\nitems = 4\n'
        + '[benchmarks.roles]\nobserver = ["obs"]\njudge = ["jud"]\n'
    )
    config.write_text(text.replace('"jud-model"', '"jud-modle"'))
    run_dir = tmp_path / "runs" / "roles"
    assert tally_kinds("run", str(config)).returncode == 3
    assert observers.stats()["by_model"] == {"obs-model": 4}

    config.write_text(text)
    replaced = tally_kinds("run", str(config), "--replace-model", "jud")
    assert replaced.returncode == 0, replaced.stderr
    assert observers.stats()["by_model"] == {"obs-model": 8}
    assert judge.stats()["by_model"] == {"jud-model": 4}
    status = orjson.loads(tally_kinds("status", str(run_dir), "--json").stdout)
    assert [(s["model"], s["calls"], s["chains"]) for s in status["superseded"]] == [("jud", 8, 4)]
    assert status["overall"]["planned"] == status["overall"]["ok"] == 8
    assert tally_kinds("verify", str(run_dir)).returncode == 0
