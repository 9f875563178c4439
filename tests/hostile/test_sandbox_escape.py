"""Model-written code that escapes through a benchmark program, end to end through `tally run`.

HumanEval/160 (`do_algebra`) builds a string from its arguments and `eval`s it, so the backward
answer `['+exec("<code>")#'], [1, 2]`, a pure literal, runs `<code>` inside verification. The
mock provider scripts one such answer per model: (a) read every reachable process's environ for
the key, (b) switch the audit hook off, then write outside the scratch directory, open a socket
to a listener of the test and run a shell, (c) SIGKILL every ancestor by pidfd, (d) switch the hook
off, fork, allocate and print without end. Each must end as a recorded verdict of its answer;
the key is nowhere in the run directory, export, report or output; no file appears outside;
`tally` exits 0 and `resume` and `verify` finish. Before the OS boundary, (a) stored the key and
(c) killed `tally` on every resume.
"""

from __future__ import annotations

import hashlib
import json
import socket
from pathlib import Path
from typing import Any

import orjson
import pytest
from secret_scan import scan

from evaltally.benchmarks.dexbench.instances import dumps, load_builtin
from evaltally.prompts import dexbench as prompts
from testkit import FAKE_KEY, tally

INSTANCE = "humaneval/HumanEval/160"
# Lists the hook's refusals empty and lets every path through (the attack of issue 22).
NEUTER = (
    "import sys\n"
    "f, g = sys._getframe(), None\n"
    "while f is not None:\n"
    "    if hasattr(f.f_globals.get('child'), 'REFUSED_EVENTS'):\n"
    "        g = f.f_globals['child']\n"
    "    f = f.f_back\n"
    "g.REFUSED_EVENTS = frozenset(); g.REFUSED_PREFIXES = ('\\0',)\n"
    "g.REFUSED_IMPORTS = frozenset(); g.PATH_EVENTS = frozenset()\n"
    "g._inside = lambda root, path: True\n"
)
ENVIRON = (
    "import os\n"
    "found = []\n"
    "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
    "    try:\n"
    "        env = open(f'/proc/{pid}/environ', 'rb').read()\n"
    "    except OSError:\n"
    "        continue\n"
    "    if b'EVALTALLY_TEST_KEY' in env:\n"
    "        found.append(env.decode()[::-1])\n"
    "pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
    "raise ValueError('LEAK ' + repr(found) if found else f'NOLEAK pids {pids}')\n"
)
OUTSIDE = (
    NEUTER + "import os, socket\n"
    "notes = []\n"
    "try:\n"
    "    open('{outside}', 'w').write('x'); notes.append('write:ok')\n"
    "except OSError as e:\n"
    "    notes.append('write:' + type(e).__name__)\n"
    "try:\n"
    "    socket.create_connection(('127.0.0.1', {port}), timeout=2); notes.append('net:ok')\n"
    "except OSError as e:\n"
    "    notes.append('net:' + type(e).__name__)\n"
    "notes.append('shell:' + str(os.system('echo x > {shell}')))\n"
    "raise ValueError('ATTEMPTS ' + ' '.join(notes))\n"
)
PIDFD = (
    NEUTER + "import os, signal\n"
    "chain, pid = [], os.getpid()\n"
    "while pid > 1:\n"
    "    status = open(f'/proc/{pid}/status').read().split('PPid:')[1]\n"
    "    pid = int(status.split()[0])\n"
    "    if pid <= 1 or b'evaltally' not in open(f'/proc/{pid}/cmdline', 'rb').read():\n"
    "        break\n"
    "    chain.append(pid)\n"
    "for pid in reversed(chain):\n"
    "    try:\n"
    "        signal.pidfd_send_signal(os.pidfd_open(pid), signal.SIGKILL)\n"
    "    except OSError:\n"
    "        pass\n"
)
GREEDY = (
    NEUTER + "import os\n"
    "for _ in range(3):\n"
    "    try:\n"
    "        if os.fork() == 0:\n"
    "            while True: pass\n"
    "    except OSError:\n"
    "        pass\n"
    "try:\n"
    "    hog = [bytearray(1 << 26) for _ in range(1000)]\n"
    "except MemoryError:\n"
    "    pass\n"
    "while True:\n"
    "    print('y' * 4096)\n"
)
MODELS = ("environ", "outside", "pidfd", "greedy")


def _answer(code: str) -> str:
    return "<answer>" + repr([f"+exec({code!r})#"]) + ", [1, 2]</answer>"


def _sha(instance: Any) -> str:
    text = prompts.backward_messages(
        instance.program,
        entry_point=instance.entry_point,
        target_line=instance.target_line,
        target_rule=instance.target_rule,
        current_input=instance.input,
        mode="mutate",
    )[-1]["content"]
    return hashlib.sha256(text.encode()).hexdigest()


def _config(
    tmp_path: Path, url: str, data: Path, models: tuple[str, ...] = MODELS, sandbox: str = ""
) -> Path:
    blocks = ['[run]\nname = "escape"\nruns_dir = "runs"\n']
    for key in models:
        blocks.append(
            f'[[models]]\nkey = "{key}"\nprovider = "openai"\nmodel = "{key}-model"\n'
            f'base_url = "{url}/v1"\napi_key_env = "EVALTALLY_TEST_KEY"\n'
            "[models.params]\nmax_tokens = 256\n[models.limits]\nconcurrency = 1\n"
        )
    blocks.append(
        f'[[benchmarks]]\nkind = "dexbench"\ndata = "{data}"\ntasks = ["backward"]\n{sandbox}'
    )
    path = tmp_path / "escape.toml"
    path.write_text("\n".join(blocks))
    return path


def _scripted(tmp_path: Path, codes: dict[str, str]) -> tuple[Path, Path]:
    """The one-instance data file and the answers file: model <key>-model answers codes[key]."""
    [instance] = [i for i in load_builtin() if i.id == INSTANCE]
    data = tmp_path / "instances.jsonl"
    data.write_text(dumps([instance]))
    sha = _sha(instance)
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(
            json.dumps({"sha256": sha, "model": f"{m}-model", "answer": _answer(code)}) + "\n"
            for m, code in codes.items()
        )
    )
    return data, answers


def test_escape_attempts_through_eval_end_as_verdicts_and_reach_nothing(
    tmp_path: Path, mock_process: Any
) -> None:
    outside, shell = tmp_path / "escaped.txt", tmp_path / "shell.txt"
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    codes = {
        "environ": ENVIRON,
        "outside": OUTSIDE.format(outside=outside, shell=shell, port=port),
        "pidfd": PIDFD,
        "greedy": GREEDY,
    }
    data, answers = _scripted(tmp_path, codes)
    mock = mock_process("--answers-file", str(answers))
    config = _config(tmp_path, mock.base_url, data)
    run_dir = tmp_path / "runs" / "escape"

    run = tally("run", str(config), timeout=300)
    assert run.returncode == 0, run.stderr
    assert "verified this session: passed" in run.stdout
    resumed = tally("resume", str(run_dir), timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert tally("verify", str(run_dir)).returncode == 0

    export = tmp_path / "export.jsonl"
    assert tally("export", str(run_dir), "-o", str(export)).returncode == 0
    rows = {r["model"]: r for r in map(orjson.loads, export.read_bytes().splitlines())}
    verdicts = {m: rows[m]["verification"] for m in MODELS}
    assert all(v["status"] in ("passed", "failed") for v in verdicts.values()), verdicts
    messages = {m: v["detail"]["message"] for m, v in verdicts.items()}
    assert "NOLEAK pids" in messages["environ"], messages  # it ran, and saw no key
    assert "ATTEMPTS write:" in messages["outside"], messages
    assert "net:ok" not in messages["outside"] and "write:ok" not in messages["outside"]
    assert not outside.exists() and not shell.exists()
    with pytest.raises(BlockingIOError):
        listener.accept()  # nobody connected
    listener.close()
    report = tally("report", str(run_dir), "--resamples", "0")
    assert report.returncode == 0, report.stderr
    assert all(v["detail"]["sandbox"] == "os" for v in verdicts.values()), verdicts
    assert "OS sandbox (bubblewrap" in report.stdout

    outputs = {
        f"{name}.{stream}": getattr(result, stream)
        for name, result in (("run", run), ("resume", resumed), ("report", report))
        for stream in ("stdout", "stderr")
    }
    assert scan({"key": FAKE_KEY}, run_dir=run_dir, export=export, **outputs) == []


RAW_ENVIRON = (
    "import os\n"
    "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
    "    try:\n"
    "        env = open(f'/proc/{pid}/environ', 'rb').read()\n"
    "    except OSError:\n"
    "        continue\n"
    "    if b'EVALTALLY_TEST_KEY=' in env:\n"
    "        key = env.split(b'EVALTALLY_TEST_KEY=')[1].split(bytes(1))[0]\n"
    "        raise ValueError('KEY ' + key.decode())\n"
    "raise ValueError('NOKEY')\n"
)


def test_in_the_weaker_process_mode_a_stolen_key_is_still_redacted_from_the_verdict(
    tmp_path: Path, mock_process: Any
) -> None:
    # Without namespaces the program can read tally's environ: the last layer must hold.
    data, answers = _scripted(tmp_path, {"thief": RAW_ENVIRON})
    mock = mock_process("--answers-file", str(answers))
    config = _config(tmp_path, mock.base_url, data, ("thief",), 'sandbox = "process"\n')
    run_dir = tmp_path / "runs" / "escape"
    run = tally("run", str(config))
    assert run.returncode == 0, run.stderr
    export = tmp_path / "export.jsonl"
    assert tally("export", str(run_dir), "-o", str(export)).returncode == 0
    [row] = [orjson.loads(line) for line in export.read_bytes().splitlines()]
    assert "ValueError: KEY [redacted]" in row["verification"]["detail"]["message"], row
    found = scan({"key": FAKE_KEY}, run_dir=run_dir, export=export, out=run.stdout + run.stderr)
    assert found == []
