"""`tally mock-server` and `python -m evaltally.mockserver`.

The root CLI registers the command with `app.command("mock-server")(mock_server_command)`.
Flags override knobs from `--config` (TOML: knobs at top level or under [mock]); a flag left
out keeps the file's value or the default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from evaltally.errors import EvaltallyError
from evaltally.mockserver.config import MockConfig
from evaltally.mockserver.fault_rules import FaultRule

MAX_PORT = 65535


def mock_server_command(
    host: str = typer.Option("127.0.0.1", help="Interface to bind (loopback by default)."),
    port: int = typer.Option(0, help="TCP port; 0 picks a free one (see --ready-file)."),
    ready_file: Path | None = typer.Option(
        None, "--ready-file", help="Write the base URL here once listening (atomic)."
    ),
    config: Path | None = typer.Option(None, "--config", help="TOML file of mock knobs."),
    seed: int | None = typer.Option(None, help="Seed of answers, random faults and jitter."),
    latency_ms: float | None = typer.Option(None, "--latency-ms", help="Fixed answer delay."),
    jitter_ms: float | None = typer.Option(None, "--jitter-ms", help="Uniform extra delay."),
    rpm: int | None = typer.Option(None, help="Requests per minute (0: unlimited)."),
    tpm: int | None = typer.Option(None, help="Tokens per minute (0: unlimited)."),
    rpm_burst: int | None = typer.Option(None, "--rpm-burst", help="Request bucket size."),
    tpm_burst: int | None = typer.Option(None, "--tpm-burst", help="Token bucket size."),
    limit_mode: str | None = typer.Option(
        None, "--limit-mode", help="token_bucket (default), fixed_window or sliding_window."
    ),
    limit_window_s: float | None = typer.Option(
        None, "--limit-window-s", help="Window (or bucket burst period) in seconds; default 1."
    ),
    ratelimit_headers: bool | None = typer.Option(
        None, "--ratelimit-headers/--no-ratelimit-headers", help="Send rate-limit headers."
    ),
    advertise_factor: float | None = typer.Option(
        None, "--advertise-factor", help="Headers claim this x the enforced limit."
    ),
    error_429_rate: float | None = typer.Option(None, "--error-429-rate"),
    error_500_rate: float | None = typer.Option(None, "--error-500-rate"),
    error_502_rate: float | None = typer.Option(None, "--error-502-rate"),
    error_503_rate: float | None = typer.Option(None, "--error-503-rate"),
    overloaded_rate: float | None = typer.Option(None, "--overloaded-rate", help="HTTP 529."),
    drop_rate: float | None = typer.Option(None, "--drop-rate", help="Close without answer."),
    hang_rate: float | None = typer.Option(None, "--hang-rate", help="Answer after --hang-s."),
    hang_s: float | None = typer.Option(None, "--hang-s"),
    malformed_rate: float | None = typer.Option(None, "--malformed-rate"),
    safety_rate: float | None = typer.Option(None, "--safety-rate"),
    prompt_block_rate: float | None = typer.Option(None, "--prompt-block-rate"),
    reasoning_tokens: int | None = typer.Option(None, "--reasoning-tokens"),
    answers_file: Path | None = typer.Option(None, "--answers-file", help="Scripted answers."),
    default_answer: str | None = typer.Option(None, "--default-answer"),
    fault: list[str] | None = typer.Option(
        None, "--fault", help="Scheduled fault KIND[:COUNT[:SCOPE[:RETRY_AFTER]]], repeatable."
    ),
    no_auth: bool = typer.Option(False, "--no-auth", help="Do not require credentials."),
) -> None:
    """Run a local mock LLM provider (OpenAI, Anthropic, Gemini, Bedrock dialects)."""
    if not 0 <= port <= MAX_PORT:
        typer.echo(
            f"error: --port: must be 0..{MAX_PORT} (0 picks a free one), got {port}", err=True
        )
        raise typer.Exit(2)
    flags: dict[str, Any] = {
        "seed": seed,
        "latency_ms": latency_ms,
        "latency_jitter_ms": jitter_ms,
        "rpm": rpm,
        "tpm": tpm,
        "rpm_burst": rpm_burst,
        "tpm_burst": tpm_burst,
        "limit_mode": limit_mode,
        "limit_window_s": limit_window_s,
        "ratelimit_headers": ratelimit_headers,
        "advertise_factor": advertise_factor,
        "error_429_rate": error_429_rate,
        "error_500_rate": error_500_rate,
        "error_502_rate": error_502_rate,
        "error_503_rate": error_503_rate,
        "overloaded_rate": overloaded_rate,
        "drop_rate": drop_rate,
        "hang_rate": hang_rate,
        "hang_s": hang_s,
        "malformed_rate": malformed_rate,
        "safety_rate": safety_rate,
        "prompt_block_rate": prompt_block_rate,
        "reasoning_tokens": reasoning_tokens,
        "answers_file": answers_file,
        "default_answer": default_answer,
    }
    changes = {k: v for k, v in flags.items() if v is not None}
    if no_auth:
        changes["require_auth"] = False
    try:
        cfg = MockConfig.from_toml(config) if config is not None else MockConfig()
        if fault:
            changes["faults"] = cfg.faults + tuple(FaultRule.parse(f) for f in fault)
        cfg = cfg.replace(changes, source="command line")
        from evaltally.mockserver.server import serve

        serve(cfg, host=host, port=port, ready_file=ready_file)
    except EvaltallyError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except OSError as exc:
        typer.echo(f"error: cannot listen on {host}:{port}: {exc}", err=True)
        raise typer.Exit(2) from None


app = typer.Typer(add_completion=False, help="Local mock LLM provider.")
app.command()(mock_server_command)


def main() -> None:
    app()
