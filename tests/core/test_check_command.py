"""`tally check CONFIG` against the mock provider: one good model, one with a wrong key, one
with a model id the provider does not serve. One request each, a table, exit 2, and nothing
written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testkit import FAKE_KEY, tally, write_config, write_items

OTHER = "EVALTALLY_OTHER_KEY"


def test_check_finds_the_bad_key_and_the_unknown_model(tmp_path: Path, mock_process: Any) -> None:
    knobs = tmp_path / "mock.toml"
    knobs.write_text(f'api_key = "{FAKE_KEY}"\nmodels = ["m1-model", "badkey-model"]\n')
    mock = mock_process("--config", str(knobs))
    write_items(tmp_path / "items.jsonl", 40)
    path = write_config(tmp_path, mock.base_url, models=("m1", "typo"))
    text = path.read_text()
    # "typo" asks for a model the provider does not serve; "badkey" sends another key.
    text += (
        f'\n[[models]]\nkey = "badkey"\nprovider = "openai"\nmodel = "badkey-model"\n'
        f'base_url = "{mock.base_url}/v1"\napi_key_env = "{OTHER}"\n'
        "[models.params]\nmax_tokens = 64\n[models.price]\ninput_per_mtok = 1.0\n"
        "output_per_mtok = 2.0\n"
    )
    path.write_text(text)
    done = tally("check", str(path), env={OTHER: "sk-wrong-" + "x" * 30})
    assert done.returncode == 2, done.stdout + done.stderr
    rows = {
        line.split("│")[1].strip(): line for line in done.stdout.splitlines() if line.count("│") > 5
    }
    assert "accepted" in rows["m1"] and "yes" in rows["m1"].split("│")[-2]
    assert "rejected" in rows["badkey"] and "NO" in rows["badkey"]
    # Priced: the sweep's estimated cost, the same as `tally plan` shows.
    planned = tally("plan", str(path)).stdout
    cost = rows["badkey"].split("│")[7].strip()
    assert cost.startswith("$") and any(
        "badkey" in line and cost in line for line in planned.splitlines()
    )
    typo = rows["typo"].split("│")
    assert typo[3].strip() == "no" and typo[-2].strip() == "NO"
    assert "typo-model" in done.stderr  # the provider's message keeps the wrong id readable
    assert "would fail: typo, badkey" in done.stderr
    stats = mock.stats()
    assert stats["total"] == 3  # one request per model
    assert not (tmp_path / "runs").exists()  # nothing written
