"""`tally verify` cross-checks every answered outcome against the response the provider sent:
an `ok` row appended with a correctly computed hash chain no longer passes."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from ledger_hostile_kit import append_attempt, append_ok, prompts_sweep, run_tally

from evaltally.ledger.verify_answers import holds_text

AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDTESTONLY",
    "AWS_SECRET_ACCESS_KEY": "test-only-secret",
    "AWS_REGION": "us-east-1",
}


def run_with_a_failed_call(tmp_path: Path, mock_process: Any) -> tuple[Path, str]:
    """A finished run of 5 calls where the provider refused one (HTTP 400): its call id."""
    faults = tmp_path / "faults.toml"
    faults.write_text('[[faults]]\nkind = "400"\nmatch = "question 3"\ncount = 100\n')
    mock = mock_process("--config", str(faults))
    config = prompts_sweep(tmp_path, mock.base_url, 5)
    code, _, err = run_tally("run", str(config))
    assert code == 3, err
    run_dir = tmp_path / "runs" / "t"
    conn = sqlite3.connect(run_dir / "ledger.sqlite")
    (call_id,) = conn.execute("SELECT call_id FROM planned WHERE item_id = 'q3'").fetchone()
    conn.close()
    code, out, err = run_tally("verify", str(run_dir))
    assert code == 0, out + err
    return run_dir, call_id


def forged_copy(run_dir: Path, name: str) -> tuple[Path, sqlite3.Connection]:
    copy = Path(shutil.copytree(run_dir, run_dir.parent / name))
    return copy, sqlite3.connect(copy / "ledger.sqlite")


def test_a_forged_ok_without_an_answer_fails_verify(tmp_path: Path, mock_process: Any) -> None:
    run_dir, call_id = run_with_a_failed_call(tmp_path, mock_process)
    forged, conn = forged_copy(run_dir, "forged")
    seq = append_ok(conn, call_id, '"the answer we wanted"')
    conn.commit()
    conn.close()

    code, _, err = run_tally("verify", str(forged))

    assert code == 4, err
    assert f"violation: outcomes seq {seq} (call {call_id[:8]}…): answered, but the call has" in err
    assert "no successful attempt before it" in err


def test_a_forged_ok_that_the_response_does_not_hold_fails_verify(
    tmp_path: Path, mock_process: Any
) -> None:
    run_dir, call_id = run_with_a_failed_call(tmp_path, mock_process)
    forged, conn = forged_copy(run_dir, "forged")
    response = orjson.dumps({"choices": [{"message": {"role": "assistant", "content": "no"}}]})
    rhash = append_attempt(conn, call_id, response=response)
    seq = append_ok(conn, call_id, '"yes"', request_hash=rhash)
    conn.commit()
    conn.close()

    code, _, err = run_tally("verify", str(forged))

    assert code == 4, err
    assert f"violation: outcomes seq {seq} (call {call_id[:8]}…): its raw_text is not" in err


def test_every_provider_shape_passes_the_cross_check(tmp_path: Path, mock_process: Any) -> None:
    """No false alarms: answers with quotes, newlines and non-ASCII text, split into parts and
    next to reasoning, as each dialect's real response carries them."""
    answer = 'He said "stop".\nThen: naïve café — ☃ \\ done'
    mock = mock_process("--default-answer", answer, "--reasoning-tokens", "7")
    config = prompts_sweep(tmp_path, mock.base_url, 3)
    blocks = [config.read_text().split("[[models]]")[0]]
    dialects = [
        ("openai", f'base_url = "{mock.base_url}/v1"\napi_key_env = "EVALTALLY_TEST_KEY"\n'),
        ("anthropic", f'base_url = "{mock.base_url}"\napi_key_env = "EVALTALLY_TEST_KEY"\n'),
        ("gemini", f'base_url = "{mock.base_url}"\napi_key_env = "EVALTALLY_TEST_KEY"\n'),
        ("bedrock", f'base_url = "{mock.base_url}"\n'),
    ]
    for provider, where in dialects:
        blocks.append(
            f'[[models]]\nkey = "{provider}"\nprovider = "{provider}"\nmodel = "m-{provider}"\n'
            f'{where}reasoning = "on"\n[models.params]\nmax_tokens = 2000\n'
        )
    blocks.append('[[benchmarks]]\nkind = "prompts"\npath = "items.jsonl"\n')
    config.write_text("\n".join(blocks))

    code, _, err = run_tally("run", str(config), env=AWS_ENV)
    assert code == 0, err
    run_dir = tmp_path / "runs" / "t"
    conn = sqlite3.connect(run_dir / "ledger.sqlite")
    texts = {t for (t,) in conn.execute("SELECT raw_text FROM outcomes")}
    conn.close()
    assert texts == {answer}
    code, out, err = run_tally("verify", str(run_dir))
    assert code == 0, out + err


@pytest.mark.parametrize(
    ("body", "text", "held"),
    [
        (b'{"status": 200}', '{"status": 200}', True),  # an offline predictor's own text
        (b'{"choices": [{"message": {"content": "a\\"b\\n"}}]}', 'a"b\n', True),
        (  # Anthropic: thinking, then two text blocks joined
            b'{"content": [{"type": "thinking", "thinking": "hmm"},'
            b' {"type": "text", "text": "Par"}, {"type": "text", "text": "is"}]}',
            "Paris",
            True,
        ),
        (  # Gemini: parts joined across the candidate
            b'{"candidates": [{"content": {"parts": [{"text": "4"}, {"text": "2"}]}}]}',
            "42",
            True,
        ),
        (b'{"content": [{"text": "is"}, {"text": "Par"}]}', "Paris", False),  # wrong order
        (b'{"choices": [{"message": {"content": "Lyon"}}]}', "Paris", False),
        (b'{"usage": {"prompt_tokens": 42}}', "42", False),  # numbers are not text
        (b"not json", "Paris", False),
    ],
)
def test_holds_text(body: bytes, text: str, held: bool) -> None:
    assert holds_text(body, text) is held
