"""(f) `tally view` on a 1,000,000-call ledger: the calls table's first page and filtered pages.

The ledger is shaped like bench/ledger_scale.py's (4 models x chains of 10 steps, 64-hex call
ids), but every call is finished, as at the end of a sweep: about 90% ok, 4% parse_error, 3%
failed after a 429 and a retry, 1% blocked, 2% never finished; one answer in 10,000 holds the
word "needle" (a rare text search). Each call has attempt start/end rows with bodies.

The view is started as `tally view RUN --port 0` in its own process; each page is fetched over
HTTP from 127.0.0.1 like the browser does, `--reps` times; the median wall time is reported.
Target: every page (first page and each filtered page) under 1 s.

Usage: .venv/bin/python bench/view_scale.py [--calls 1000000] [--dir PATH] [--reps 3]
       (--dir keeps the ledger there and reuses it on the next run)
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import PYTHON, median, save, table, workdir
from ledger_scale import STEPS
from ledger_scale import plan as ledger_plan

TARGET_S = 1.0
# (label, query string) of the pages measured; `after` pages continue from the first page.
PAGES: tuple[tuple[str, dict[str, str]], ...] = (
    ("first page", {}),
    ("model", {"model": "model-c"}),
    ("status failed", {"status": "failed"}),
    ("status unfinished", {"status": "unfinished"}),
    ("model + status parse_error", {"model": "model-b", "status": "parse_error"}),
    ("protocol", {"protocol": "free_rollout"}),
    ("item", {"item": "scenario-012345"}),
    ("text search (common)", {"q": "value"}),
    ("text search (rare)", {"q": "needle"}),
    ("model + text (rare)", {"model": "model-a", "q": "needle"}),
    ("status + text (rare)", {"status": "parse_error", "q": "needle"}),
    ("item + text", {"item": "scenario-012345", "q": "value"}),
    ("text matching nothing", {"q": "no-such-text"}),
)


def _calls(n: int) -> Iterator[tuple[int, Any]]:
    """bench/ledger_scale.py's plan, every third chain in another protocol (a filter to test)."""
    for i, call in enumerate(ledger_plan(n)):
        if (i // STEPS) % 3:
            call = dataclasses.replace(call, protocol="answers_revealed")
        yield i, call


def _fate(i: int) -> str:
    r = (i * 2654435761) % 100
    if r < 90:
        return "ok"
    if r < 94:
        return "parse_error"
    if r < 97:
        return "failed"
    if r < 98:
        return "blocked"
    return "unfinished"


async def build(n: int, run_dir: Path) -> None:
    from evaltally.ledger import Ledger
    from evaltally.records import Usage

    async with await Ledger.open(run_dir, create=True, command="bench view_scale") as ledger:
        await ledger.reconcile_plan(c for _, c in _calls(n))
        for i, call in _calls(n):
            _record(ledger, i, call.call_id, _fate(i), Usage(900, 40))
            if i % 5000 == 0:
                await ledger.throttle()
                await asyncio.sleep(0)


def _record(ledger: Any, i: int, call_id: str, fate: str, usage: Any) -> None:
    """The events of call number i: nothing (unfinished), a blocked outcome, or a 429 attempt
    followed by a failed outcome or by an answered attempt and its outcome."""
    from evaltally.records import Status

    if fate == "unfinished":
        return
    body = json.dumps({"messages": [{"role": "user", "content": f"call {i}"}]}).encode()
    h = hashlib.sha256(body).hexdigest()
    word = "needle" if i % 10_000 == 7 else "value"
    text = f'{{"ok": true, "{word}": {i}}}' if fate == "ok" else f"I think {word} {i}"
    parsed = {"ok": True, word: i} if fate == "ok" else None
    outcome: dict[str, Any] = {
        "raw_text": text, "parsed": parsed, "parse_path": "strict" if parsed else None,
        "reason": None, "request_hash": h, "attempts": 2, "usage": usage, "latency_ms": 45.0,
    }  # fmt: skip
    if fate == "blocked":
        outcome.update(raw_text=None, reason="an earlier step failed", request_hash=None,
                       attempts=0, usage=None, latency_ms=None)  # fmt: skip
    else:
        answers = [(429, "http_429", 1.0, b'{"error": "slow down"}', None)]
        if fate == "failed":
            outcome.update(raw_text=None, reason="gave up after 1 attempts; last: http_429",
                           attempts=1, usage=None, latency_ms=5.0)  # fmt: skip
        else:
            answers.append((200, None, None, text.encode(), usage))
        for attempt, (status, error, retry, response, used) in enumerate(answers, 1):
            ledger.attempt_started(call_id, attempt, h, body)
            ledger.attempt_finished(
                call_id, attempt, http_status=status, error_class=error, error_detail=error,
                retry_after_s=retry, response_body=response, usage=used, latency_ms=40.0,
                request_id=f"req-{i}-{attempt}",
            )  # fmt: skip
    ledger.outcome(call_id, Status(fate), **outcome)


def fetch(base: str, run: str, query: dict[str, str], page: str = "calls") -> tuple[float, Any]:
    url = f"{base}/api/runs/{run}/{page}?" + urllib.parse.urlencode(query)
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as resp:
        data = json.loads(resp.read())
    return time.perf_counter() - t0, data


def serve(run_dir: Path, ready: Path) -> subprocess.Popen[bytes]:
    cmd = [PYTHON, "-m", "evaltally", "view", str(run_dir), "--port", "0"]
    proc = subprocess.Popen([*cmd, "--ready-file", str(ready)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"tally view did not start: {proc.communicate()[1].decode()}")
        time.sleep(0.05)
    return proc


def measure_overview(base: str, run: str) -> dict[str, float]:
    """Not a target: the first answer (bounded by AGGREGATE_WAIT_S), when the whole-ledger
    aggregate is ready (computed in the background), and an answer once it is."""
    t0 = time.perf_counter()
    first_s, data = fetch(base, run, {}, "overview")
    while data["totals"] is None and time.perf_counter() - t0 < 600:
        time.sleep(0.5)
        data = fetch(base, run, {}, "overview")[1]
    ready_s = time.perf_counter() - t0
    return {
        "overview_first_s": first_s,
        "overview_ready_s": ready_s,
        "overview_again_s": fetch(base, run, {}, "overview")[0],
    }


def measure(run_dir: Path, reps: int) -> tuple[list[dict[str, Any]], dict[str, float]]:
    ready = run_dir.parent / "view.url"
    ready.unlink(missing_ok=True)
    proc = serve(run_dir, ready)
    rows = []
    try:
        base = ready.read_text().strip()
        overview = measure_overview(base, run_dir.name)
        print(", ".join(f"{k} {v:.2f}" for k, v in overview.items()), flush=True)
        for label, query in PAGES:
            times, data = [], {}
            for _ in range(reps):
                dt, data = fetch(base, run_dir.name, query)
                times.append(dt)
            after = data.get("next")
            next_s = fetch(base, run_dir.name, {**query, "after": str(after)})[0] if after else 0.0
            rows.append(
                {
                    "page": label,
                    "rows": len(data["calls"]),
                    "median_s": median(times),
                    "max_s": max(times),
                    "next_page_s": next_s,
                }
            )
            print(f"{label}: {len(data['calls'])} rows, {median(times):.3f} s", flush=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()
    return rows, overview


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--calls", type=int, default=1_000_000)
    p.add_argument("--dir", type=Path, default=None)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    base = args.dir or workdir("view")
    run_dir = base / "view-scale"
    try:
        build_s = None
        if not (run_dir / "ledger.sqlite").exists():
            t0 = time.perf_counter()
            asyncio.run(build(args.calls, run_dir))
            build_s = time.perf_counter() - t0
            print(f"ledger of {args.calls:,} calls built in {build_s:.0f} s", flush=True)
        rows, overview = measure(run_dir, args.reps)
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    met = all(r["median_s"] < TARGET_S and r["next_page_s"] < TARGET_S for r in rows)
    keys = ["page", "rows", "median_s", "max_s", "next_page_s"]
    print(table([[r[k] for k in keys] for r in rows], keys))
    target = f"every calls page (first and filtered, and the page after) < {TARGET_S:.0f} s"
    print(f"(f) view paging on {args.calls:,} calls: {target}: {'MET' if met else 'MISSED'}")
    save(
        "view_scale",
        {
            "params": {"calls": args.calls, "reps": args.reps},
            "build_s": build_s,
            "overview": overview,
            "pages": rows,
            "median": {r["page"]: r["median_s"] for r in rows},
            "target": target,
            "met": met,
        },
    )
    sys.exit(0)


if __name__ == "__main__":
    main()
