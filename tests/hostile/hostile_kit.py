"""The hostile suite's kit: credentials for every provider kind (built from parts, so they do not
read as committed keys) and a config with one model per (provider, scenario) pointed at a
hostile server (hostile_server.py; a `with` block starts and always stops it)."""

from __future__ import annotations

import base64
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
from hostile_server import Seen

from testkit import tally, write_items

# A vLLM/proxy token looks like no vendor's key: only redaction by exact value can catch it.
PROXY_TOKEN = "vllm" + "-tok-" + "7Hq2Zr9LmP4xWc8K"
ANTHROPIC_KEY = "sk-ant-" + "api03-" + "Hostile0Echo1Key2Value3"
GEMINI_KEY = "AIza" + "SyHostile" + "EchoKey0123456789abcdefg"
AWS_ACCESS_KEY = "AKIA" + "HOSTILE0EXAMPLE1"
AWS_SECRET_KEY = "wJalr" + "XUtnFEMI/K7MDENG/" + "bPxRfiCYHOSTILEKEY"
AWS_SESSION_TOKEN = "IQoJb3JpZ2luX2Vj" + "EHostileSessionToken0123456789"

SECRETS = {
    "proxy token": PROXY_TOKEN,
    "anthropic key": ANTHROPIC_KEY,
    "gemini key": GEMINI_KEY,
    "aws access key id": AWS_ACCESS_KEY,
    "aws secret key": AWS_SECRET_KEY,
    "aws session token": AWS_SESSION_TOKEN,
}
"""Everything that must never reach a file or an output."""

CREDENTIAL_ENV = {
    "HOSTILE_PROXY_TOKEN": PROXY_TOKEN,
    "HOSTILE_ANTHROPIC_KEY": ANTHROPIC_KEY,
    "HOSTILE_GEMINI_KEY": GEMINI_KEY,
    "AWS_ACCESS_KEY_ID": AWS_ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": AWS_SECRET_KEY,
    "AWS_SESSION_TOKEN": AWS_SESSION_TOKEN,
    "AWS_REGION": "us-east-1",
}

# provider -> (path appended to the server's URL, key variable line)
PROVIDERS = {
    "openai": ("/v1", 'api_key_env = "HOSTILE_PROXY_TOKEN"'),
    "anthropic": ("", 'api_key_env = "HOSTILE_ANTHROPIC_KEY"'),
    "gemini": ("", 'api_key_env = "HOSTILE_GEMINI_KEY"'),
    "bedrock": ("", 'region = "us-east-1"'),
}

SENT_CREDENTIALS = ("authorization", "x-api-key", "x-goog-api-key", "x-amz-security-token")
"""The headers that carry a credential, one per provider kind."""


def echo_of(seen: Seen) -> str:
    """Every header value the server received, as is and in the encodings servers use."""
    pieces = []
    # credentials first, so they fall inside the part of a message an error detail keeps
    for name, value in sorted(seen.headers.items(), key=lambda h: h[0] not in SENT_CREDENTIALS):
        raw = value.encode()
        pieces += [
            f"{name}={value}",
            f"b64={base64.b64encode(raw).decode()}",
            f"basic={base64.b64encode(b'user:' + raw).decode()}",
            f"url={quote(value, safe='')}",
            f"upper={value.upper()}",
            f"clipped={value[:16]}...{value[-16:]}",
        ]
    return "; ".join(pieces)


LIMITS = (
    "concurrency = 1\nmax_attempts = 2\nbackoff_initial_s = 0.01\nbackoff_max_s = 0.05\n"
    "timeout_s = 20"
)


@dataclass(frozen=True)
class Model:
    """One [[models]] entry: `model` is the id the server sees, so a handler can pick the
    scenario from it (`Seen.mentions`)."""

    key: str
    provider: str
    model: str
    limits: str = ""


def write_hostile_config(
    tmp_path: Path, base_url: str, models: list[Model], *, items: int = 1
) -> Path:
    write_items(tmp_path / "items.jsonl", items)
    blocks = ['[run]\nname = "hostile"\nruns_dir = "runs"\n']
    for m in models:
        path, key_line = PROVIDERS[m.provider]
        blocks.append(
            f'[[models]]\nkey = "{m.key}"\nprovider = "{m.provider}"\nmodel = "{m.model}"\n'
            f'base_url = "{base_url}{path}"\n{key_line}\n'
            f"[models.params]\nmax_tokens = 32\n[models.limits]\n{LIMITS}\n{m.limits}\n"
        )
    blocks.append('[[benchmarks]]\nkind = "prompts"\npath = "items.jsonl"\n')
    config = tmp_path / "hostile.toml"
    config.write_text("\n".join(blocks))
    return config


def every_provider(scenario: str) -> list[Model]:
    """One model per provider kind, all asking the server for `scenario`."""
    return [Model(f"{p}-{scenario}", p, f"{scenario}-{p}") for p in PROVIDERS]


@dataclass
class Session:
    """Every output of one run and of the commands users run on it afterwards."""

    run: subprocess.CompletedProcess[str]
    run_dir: Path
    export: Path
    outputs: dict[str, str]

    def rows(self) -> dict[str, dict[str, Any]]:
        """Export rows by model key."""
        lines = self.export.read_text().splitlines()
        return {row["model"]: row for row in map(orjson.loads, lines)}


def run_and_inspect(config: Path) -> Session:
    """`tally run`, then status, export, verify and report on the run, all as subprocesses."""
    run_dir = config.parent / "runs" / "hostile"
    export = config.parent / "export.jsonl"
    run = tally("run", str(config), env=CREDENTIAL_ENV)
    outputs = {"run stdout": run.stdout, "run stderr": run.stderr}
    for args in (
        ("status", str(run_dir)),
        ("export", str(run_dir), "-o", str(export)),
        ("verify", str(run_dir)),
        ("report", str(run_dir)),
    ):
        done = tally(*args, env=CREDENTIAL_ENV)
        outputs[f"{args[0]} stdout"] = done.stdout
        outputs[f"{args[0]} stderr"] = done.stderr
    return Session(run, run_dir, export, outputs)
