"""Deterministic and scripted answers, and the per-body counts of /stats."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from evaltally.errors import DataError
from evaltally.mockserver import MockConfig, MockServer

AUTH = {"Authorization": "Bearer sk-test"}


def body(text: str, model: str = "m") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


async def answers(cfg: MockConfig, texts: list[str], model: str = "m") -> list[dict[str, Any]]:
    out = []
    async with MockServer(cfg) as srv, aiohttp.ClientSession() as s:
        for t in texts:
            async with s.post(
                f"{srv.base_url}/v1/chat/completions", json=body(t, model), headers=AUTH
            ) as r:
                assert r.status == 200
                out.append(orjson.loads(await r.read())["choices"][0])
    return out


def texts_of(choices: list[dict[str, Any]]) -> list[str]:
    return [c["message"]["content"] for c in choices]


async def test_same_seed_and_body_same_answer_other_seed_differs() -> None:
    a = texts_of(await answers(MockConfig(seed=7), ["x", "y", "x"]))
    b = texts_of(await answers(MockConfig(seed=7), ["x", "y"]))
    c = texts_of(await answers(MockConfig(seed=8), ["x", "y"]))
    assert a[0] == a[2] == b[0] and a[1] == b[1]
    assert a[0] != a[1]
    assert c[0] != a[0] and c[1] != a[1]
    parsed = orjson.loads(a[0])
    assert parsed["ok"] is True and len(parsed["mock"]) == 8


async def test_echoes_requested_model() -> None:
    async with (
        MockServer() as srv,
        aiohttp.ClientSession() as s,
        s.post(
            f"{srv.base_url}/v1/chat/completions", json=body("x", "my-model-v2"), headers=AUTH
        ) as r,
    ):
        assert (await r.json())["model"] == "my-model-v2"


def write_script(tmp_path: Path, lines: list[dict[str, Any]]) -> Path:
    path = tmp_path / "answers.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    return path


async def test_scripted_answers_first_match_wins(tmp_path: Path) -> None:
    sha = hashlib.sha256(b"exact prompt").hexdigest()
    path = write_script(
        tmp_path,
        [
            {"sha256": sha, "answer": "by hash"},
            {"match": "capital of France", "answer": "Paris"},
            {"match": "capital", "answer": "some capital"},
            {"match": "cut", "answer": "partial", "finish": "length"},
            {"match": "think", "answer": "ok", "reasoning_tokens": 42},
            {"match": "other model", "model": "special", "answer": "special only"},
        ],
    )
    cfg = MockConfig(answers_file=path)
    got = await answers(
        cfg,
        ["exact prompt", "What is the capital of France?", "capital of Peru", "cut", "think"],
    )
    assert texts_of(got) == ["by hash", "Paris", "some capital", "partial", "ok"]
    assert got[3]["finish_reason"] == "length"
    # Unmatched requests (and model-restricted lines for other models) fall back to generation.
    fallback = texts_of(await answers(cfg, ["other model", "unmatched"]))
    assert all(orjson.loads(t)["ok"] for t in fallback)
    assert texts_of(await answers(cfg, ["other model"], model="special")) == ["special only"]


async def test_scripted_answer_lists_serve_samples_in_turn(tmp_path: Path) -> None:
    path = write_script(tmp_path, [{"match": "roll", "answers": ["1", "2", "3"]}])
    got = texts_of(await answers(MockConfig(answers_file=path), ["roll"] * 4 + ["roll again"]))
    assert got == ["1", "2", "3", "1", "1"]


def test_bad_script_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"match": "a", "answer": "b"}\n{"match": "a"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.jsonl:2"):
        MockServer(MockConfig(answers_file=path))


async def test_stats_count_each_body_hash_and_status() -> None:
    async with MockServer() as srv, aiohttp.ClientSession() as s:
        url = f"{srv.base_url}/v1/chat/completions"
        raw_a = orjson.dumps(body("a"))
        raw_b = orjson.dumps(body("b"))
        for raw in (raw_a, raw_a, raw_b):
            async with s.post(url, data=raw, headers={**AUTH, "Content-Type": "application/json"}):
                pass
        async with s.get(f"{srv.base_url}/stats") as r:
            stats = await r.json()
    assert stats["total"] == 3
    assert stats["by_body"] == {
        hashlib.sha256(raw_a).hexdigest(): 2,
        hashlib.sha256(raw_b).hexdigest(): 1,
    }
    assert stats["by_status"] == {"200": 3}
    assert stats["by_dialect"] == {"openai": 3}
    assert stats["in_flight"] == 0 and stats["completion_tokens"] > 0
