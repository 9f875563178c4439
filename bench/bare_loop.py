"""The physical reference: a bare aiohttp loop, no ledger, no SDK, no retries, no pacing.

One pooled `aiohttp.ClientSession`, `asyncio.Semaphore(--concurrency)`, the same chat request
`tally run` sends (same JSON body shape and headers), each answer parsed with orjson and kept
in memory. Nothing a tool could leave out is done, so its time is what the client side of this
traffic costs at least on this machine; `tally run` is compared to it in bench/throughput.py.

Prints one JSON line: {"n", "ok", "errors", "wall_s"}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson


def headers() -> dict[str, str]:
    return {
        "authorization": f"Bearer {os.environ.get('EVALTALLY_BENCH_KEY', 'sk-bench')}",
        "content-type": "application/json",
    }


def chat_body(args: argparse.Namespace, item: dict[str, Any]) -> bytes:
    """The request `tally run` sends for `item` (same JSON body shape)."""
    return orjson.dumps(
        {
            "model": args.model,
            "messages": item["messages"],
            "temperature": 0.0,
            "max_tokens": args.max_tokens,
        }
    )


def loop_parser(description: str | None) -> argparse.ArgumentParser:
    """The options every hand loop in bench/ takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--items", required=True)
    parser.add_argument("--model", default="bench-model")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=16)
    return parser


def read_items(path: str) -> list[dict[str, Any]]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


async def main(args: argparse.Namespace, items: list[dict[str, Any]]) -> dict[str, Any]:
    url = args.base_url.rstrip("/") + "/chat/completions"
    sem = asyncio.Semaphore(args.concurrency)
    answers: dict[str, str] = {}
    errors = 0
    t0 = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(item: dict[str, Any]) -> None:
            nonlocal errors
            body = chat_body(args, item)
            async with sem, session.post(url, data=body, headers=headers()) as resp:
                raw = await resp.read()
            if resp.status == 200:
                answers[item["id"]] = orjson.loads(raw)["choices"][0]["message"]["content"]
            else:
                errors += 1

        await asyncio.gather(*(one(it) for it in items))
    return {
        "n": len(items),
        "ok": len(answers),
        "errors": errors,
        "wall_s": time.perf_counter() - t0,
    }


if __name__ == "__main__":
    ns = loop_parser(__doc__).parse_args()
    print(json.dumps(asyncio.run(main(ns, read_items(ns.items)))))
