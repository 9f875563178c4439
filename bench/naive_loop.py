"""The hand-written baseline: the official `openai` SDK, AsyncOpenAI + asyncio.Semaphore.

What a careful user writes without a tool: read the same items, send every prompt with the same
parameters, at most `--concurrency` at a time, keep the answers in memory. No ledger, no rate
limiting of its own (the SDK retries 429s and 5xx `max_retries` times, default 2).

Prints one JSON line: {"n", "ok", "errors", "wall_s", "by_error"}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections import Counter
from typing import Any

import openai
from openai import AsyncOpenAI

from bare_loop import loop_parser, read_items


async def main(args: argparse.Namespace, items: list[dict[str, Any]]) -> dict[str, Any]:
    client_kwargs: dict[str, Any] = {
        "base_url": args.base_url,
        "api_key": os.environ.get("EVALTALLY_BENCH_KEY", "sk-bench"),
        "timeout": args.timeout,
    }
    if args.max_retries is not None:
        client_kwargs["max_retries"] = args.max_retries
    client = AsyncOpenAI(**client_kwargs)
    sem = asyncio.Semaphore(args.concurrency)
    answers: dict[str, str | None] = {}
    errors: Counter[str] = Counter()

    async def one(item: dict[str, Any]) -> None:
        async with sem:
            try:
                resp = await client.chat.completions.create(
                    model=args.model,
                    messages=item["messages"],
                    temperature=0.0,
                    max_tokens=args.max_tokens,
                )
                answers[item["id"]] = resp.choices[0].message.content
            except openai.APIStatusError as exc:
                errors[str(exc.status_code)] += 1
            except openai.APIError as exc:
                errors[type(exc).__name__] += 1

    t0 = time.perf_counter()
    try:
        await asyncio.wait_for(asyncio.gather(*(one(it) for it in items)), args.deadline)
    finally:
        await client.close()
    wall = time.perf_counter() - t0
    return {
        "n": len(items),
        "ok": len(answers),
        "errors": sum(errors.values()),
        "by_error": dict(errors),
        "wall_s": wall,
    }


if __name__ == "__main__":
    parser = loop_parser(__doc__)
    parser.add_argument("--max-retries", type=int, default=None, help="SDK default if unset")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--deadline", type=float, default=600.0, help="give up after (s)")
    ns = parser.parse_args()
    print(json.dumps(asyncio.run(main(ns, read_items(ns.items)))))
