"""SCAE as a benchmark kind: typed options refused with file and key, the offline judges of
configs/scae-example.toml through the real runner and report (their statistics known in
advance), `tally report RUN` equal to `tally grade EXPORT`, and pairing with samples > 1."""

from __future__ import annotations

import math
from pathlib import Path

import orjson
import pytest
from scae_kit import episode_line, write_episodes

from evaltally import load_config
from evaltally.benchmarks.scae.conditions import prefix_length
from evaltally.benchmarks.scae.episodes import example_path, load_episodes
from evaltally.benchmarks.scae.judges import heterogeneity
from evaltally.benchmarks.scae.provenance import episode_provenance
from evaltally.errors import ConfigError
from testkit import REPO, exported, tally

JUDGES = ("last_gold", "first_gold", "last_visible")


def _config(
    tmp_path: Path, bench: str, *, judges: tuple[str, ...] = JUDGES, name: str = "s"
) -> Path:
    models = "".join(
        f'[[models]]\nkey = "{j}"\nprovider = "baseline"\nmodel = "{j}"\n' for j in judges
    )
    path = tmp_path / f"{name}.toml"
    path.write_text(f'[run]\nname = "{name}"\nruns_dir = "runs"\n{models}[[benchmarks]]\n{bench}')
    return path


@pytest.mark.parametrize(
    ("bench", "key", "reason"),
    [
        ('kind = "scae"\nfraction = 1.5\n', "fraction", "in (0, 1)"),
        ('kind = "scae"\nfraction = "half"\n', "fraction", "must be float"),
        ('kind = "scae"\nconditions = ["late"]\n', "conditions", "unknown condition 'late'"),
        ('kind = "scae"\nconditions = ["full", "full"]\n', "conditions", "twice"),
        ('kind = "scae"\nepisodes = "e.jsonl"\ncte_run = "runs/x"\n', "cte_run", "not both"),
        ('kind = "scae"\nfractoin = 0.5\n', "fractoin", "unknown key"),
        ('kind = "scae"\nlimit = 0\n', "limit", "must be > 0"),
    ],
)
def test_bad_options_name_the_file_and_key(
    tmp_path: Path, bench: str, key: str, reason: str
) -> None:
    path = _config(tmp_path, bench)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert f"{path}: benchmarks[0].{key}: " in str(err.value) and reason in str(err.value)


def test_a_bad_episode_file_names_the_key_the_line_and_the_field(tmp_path: Path) -> None:
    episodes = tmp_path / "e.jsonl"
    episodes.write_text(orjson.dumps(episode_line("a", 3)).decode() + '\n{"id": "b"}\n')
    result = tally("plan", str(_config(tmp_path, 'kind = "scae"\nepisodes = "e.jsonl"\n')))
    assert result.returncode == 2
    assert "benchmarks[0].episodes:" in result.stderr and "e.jsonl:2: episode b" in result.stderr


def _expected(choose_full: str, choose_prefix: str) -> list[tuple[int, int, int]]:
    """(T, full step, prefix step) per example episode for the offline judge's rule."""
    out = []
    for e in load_episodes(example_path()):
        prov = episode_provenance(e)
        total, k = e.total_steps, prefix_length(e.total_steps)
        steps = []
        for rule, visible in ((choose_full, total), (choose_prefix, k)):
            gold = [s for s in range(1, visible + 1) if prov[s - 1].gold]
            steps.append(
                {"last_gold": gold[-1] if gold else visible,
                 "first_gold": gold[0] if gold else 1,
                 "last_visible": visible}[rule]
            )  # fmt: skip
        out.append((total, steps[0], steps[1]))
    return out


def test_offline_judges_on_the_example_set_report_what_their_rules_imply(tmp_path: Path) -> None:
    config = REPO / "configs" / "scae-example.toml"
    text = config.read_text().replace('runs_dir = "../runs"', f'runs_dir = "{tmp_path / "runs"}"')
    (tmp_path / "scae-example.toml").write_text(text)
    run = tally("run", str(tmp_path / "scae-example.toml"))
    assert run.returncode == 0, run.stderr
    run_dir = tmp_path / "runs" / "scae-example"
    report = tally("report", str(run_dir))
    assert report.returncode == 0, report.stderr
    data = orjson.loads((run_dir / "report.json").read_bytes())
    section = data["sections"]["scae"]["benchmarks"]["scae"]
    summary = section["summary"]["judges"]
    per_judge = {}
    for judge in JUDGES:
        rows = _expected(judge, judge)
        d = [(f - p) / t for t, f, p in rows]
        later, earlier = sum(x > 0 for x in d), sum(x < 0 for x in d)
        got = summary[judge]["displacement"]
        assert (got["later"], got["earlier"], got["ties"]) == (later, earlier, 16 - later - earlier)
        assert got["mean"]["value"] == pytest.approx(sum(d) / 16)
        expected_p = None if later + earlier == 0 else 2 / 2 ** (later + earlier)
        assert got["sign_p"] == expected_p
        per_judge[judge] = d
    # last_visible: full -> T, prefix -> k: 15 later and one tie (the 1-step episode).
    assert summary["last_visible"]["positions"]["full"] == 1.0
    assert summary["last_visible"]["displacement"]["later"] == 15
    # first_gold: every episode's first gold-provenance step lies inside its prefix.
    assert summary["first_gold"]["displacement"]["ties"] == 16
    # last_gold agrees with the rule "last gold-provenance step" wherever there is one (13/16).
    assert summary["last_gold"]["rules"]["rules"]["last_gold"]["agreement"] == 13 / 16
    assert summary["last_gold"]["enrichment"]["rate"]["value"] == 13 / 16
    assert summary["last_gold"]["late_bias"]["diff"]["value"] > 0
    # Table 5 and the heterogeneity test (seed 0, 2,000 permutations) on the common episodes.
    across = section["summary"]["across_judges"]
    assert across["n_common"] == 16
    matrix = [[per_judge[j][i] for j in sorted(JUDGES)] for i in range(16)]
    het = heterogeneity(matrix, seed=0, permutations=2000)
    assert across["heterogeneity"]["displacement"] == het
    assert het["p"] == 1 / 2001  # no within-episode relabelling spreads the judges further
    assert "1.1e-16" not in report.stdout and "Across judges (common episodes)" in report.stdout
    assert data["data_sources"]["scae"]["files"][0]["path"] == str(example_path())
    documented = [
        line
        for line in (REPO / "docs" / "scae.md").read_text().splitlines()
        if line.startswith(tuple(f"| {j} | 16 |" for j in JUDGES))
    ]
    assert len(documented) == 3  # docs/scae.md shows what this run prints
    assert all(line in (run_dir / "report.md").read_text() for line in documented)

    export = tmp_path / "e.jsonl"
    assert tally("export", str(run_dir), "-o", str(export)).returncode == 0
    graded = tally("grade", str(export), "-o", str(tmp_path / "g"))
    assert graded.returncode == 0, graded.stderr
    again = orjson.loads((tmp_path / "g" / "report.json").read_bytes())
    assert again["sections"] == data["sections"]
    row = orjson.loads(export.read_bytes().splitlines()[0])
    assert row["benchmark_kind"] == "scae" and row["role"] == "judge"
    assert row["protocol"] == row["condition"] and row["source"] == "episodes"
    assert len(row["gold_provenance"]) == row["total_steps"]


def test_samples_pair_each_sample_of_the_full_condition_with_the_same_sample_of_the_prefix(
    tmp_path: Path,
) -> None:
    # Three episodes of T = 5 (k = 3), two samples each; last_visible moves 5 -> 3 every time.
    write_episodes(tmp_path / "e.jsonl", [episode_line(f"e{i}", 5) for i in range(3)])
    bench = 'kind = "scae"\nepisodes = "e.jsonl"\nsamples = 2\n'
    config = _config(tmp_path, bench, judges=("last_visible",))
    assert tally("run", str(config)).returncode == 0
    run_dir = tmp_path / "runs" / "s"
    assert tally("report", str(run_dir), "--resamples", "0").returncode == 0
    data = orjson.loads((run_dir / "report.json").read_bytes())
    section = data["sections"]["scae"]["benchmarks"]["scae"]
    d = section["summary"]["judges"]["last_visible"]["displacement"]
    assert (d["n"], d["later"], d["ties"]) == (6, 6, 0)
    assert d["mean"]["value"] == pytest.approx(2 / 5) and section["samples"] == 2
    assert d["sign_p"] == pytest.approx(2 / 2**6)
    assert "(episode, sample) is one unit" in (run_dir / "report.md").read_text()
    assert math.isclose(section["summary"]["judges"]["last_visible"]["positions"]["prefix"], 0.6)


def test_scae_check_describes_an_episode_file_and_names_a_bad_one(tmp_path: Path) -> None:
    good = tally("scae", "check", str(example_path()))
    assert good.returncode == 0, good.stderr
    assert "16 episodes from 4 repositories, 5 failing" in good.stdout
    assert "gold-provenance steps: 52 (per-episode mean share 0.581" in good.stdout
    assert "(mean 1/T): 0.261" in good.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "repository": "r", "task": "t", "gold": [], "outcome": {}}\n')
    refused = tally("scae", "check", str(bad))
    assert refused.returncode == 2 and f"{bad}:1: episode x: field gold" in refused.stderr


def test_two_scae_benchmarks_in_one_run_are_reported_apart(tmp_path: Path) -> None:
    bench = (
        'kind = "scae"\nname = "f60"\nlimit = 4\n'
        '[[benchmarks]]\nkind = "scae"\nname = "f50"\nfraction = 0.5\nlimit = 4\n'
    )
    config = _config(tmp_path, bench, judges=("last_visible",))
    assert tally("run", str(config)).returncode == 0
    run_dir = tmp_path / "runs" / "s"
    report = tally("report", str(run_dir), "--resamples", "0")
    assert report.returncode == 0, report.stderr
    data = orjson.loads((run_dir / "report.json").read_bytes())["sections"]["scae"]
    assert {label: b["prefix_fractions"] for label, b in data["benchmarks"].items()} == {
        "f50": ["1/2"], "f60": ["3/5"]}  # fmt: skip
    md = (run_dir / "report.md").read_text()
    assert "### f50: Collider displacement" in md and "### f60: Collider displacement" in md
    # The full-trace calls do not depend on the fraction: both benchmarks ask the same request.
    export = tmp_path / "e.jsonl"
    rows = exported(run_dir, export)
    full = {
        (r["benchmark"], r["item_id"]): r["request_hash"] for r in rows if r["condition"] == "full"
    }
    assert all(full[("f50", i)] == full[("f60", i)] for _, i in full)
