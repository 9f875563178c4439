"""Config values that touch credentials or the file system, checked before anything is created
or sent. Each check raises a ConfigError naming the file and the key, and never quotes a value
that may be a secret (a pasted key, a URL with a password).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from evaltally.config.records import SweepConfig
from evaltally.errors import ConfigError

MAX_RUN_NAME_BYTES = 128
"""A run name is a directory name; file systems stop at 255 bytes, and paths get long."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VENDOR_KEY = re.compile(r"sk-|AIza[0-9A-Za-z_\-]{20}|(AKIA|ASIA)[0-9A-Z]{16}\Z")


def check_run_name(path: Path, name: str) -> str:
    if not name or name.startswith(".") or "/" in name or "\\" in name or not name.isprintable():
        raise ConfigError(
            path,
            "run.name",
            "must be a plain directory name: printable characters, no / or \\, "
            "not starting with '.'",
        )
    size = len(name.encode("utf-8"))
    if size > MAX_RUN_NAME_BYTES:
        raise ConfigError(
            path,
            "run.name",
            f"is {size} bytes long; at most {MAX_RUN_NAME_BYTES} (it names a directory)",
        )
    return name


def check_runs_dir(config: SweepConfig) -> None:
    """That the run directory is, or can be made, a writable directory (at plan time)."""
    probe = config.run_dir
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(config.path, "run.runs_dir", f"{probe} is a file, not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(config.path, "run.runs_dir", f"{probe} is not writable")


def make_run_dir(config: SweepConfig) -> Path:
    """Create the run directory, or say in one line why it cannot be."""
    check_runs_dir(config)
    try:
        config.run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            config.path, "run.runs_dir", f"cannot create {config.run_dir}: {exc.strerror or exc}"
        ) from None
    return config.run_dir


def check_base_url(path: Path, key: str, provider: str, url: str) -> str:
    """An http(s) URL without credentials, query or fragment. The URL is never quoted back: it
    may hold a password."""
    if provider == "baseline" or (provider == "bedrock" and not url):
        return url
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        raise ConfigError(path, key, "is not a valid URL") from None
    if "@" in parts.netloc:
        raise ConfigError(
            path,
            key,
            "holds credentials (user:password@host); a URL ends up in logs and error messages, "
            "so remove them and put the key in the variable named by api_key_env",
        )
    if parts.scheme not in ("http", "https") or not parts.hostname or not url.isprintable():
        raise ConfigError(path, key, "must be an http:// or https:// URL with a host")
    if parts.query or parts.fragment or url.rstrip().endswith("?"):
        raise ConfigError(
            path,
            key,
            "must not carry a query or fragment: the API path is appended to it, and a key "
            "in a URL ends up in logs (use api_key_env)",
        )
    return url


def check_key_env(path: Path, key: str, name: str | None) -> str | None:
    """The NAME of a variable. A pasted key is refused without quoting any of it."""
    if name is None or (_ENV_NAME.fullmatch(name) and not _looks_like_key(name)):
        return name
    if _looks_like_key(name):
        reason = "looks like an API key, not the name of an environment variable"
    else:
        reason = "is not an environment variable name (letters, digits and _)"
    raise ConfigError(
        path,
        key,
        f"{reason} (its value is not shown); put the key in a variable "
        '(export MY_API_KEY=...) and set api_key_env = "MY_API_KEY"',
    )


def _looks_like_key(value: str) -> bool:
    """A vendor key prefix, or a long run mixing lower case, upper case and digits (variable
    names are conventionally upper case)."""
    if _VENDOR_KEY.match(value):
        return True
    kinds = (str.islower, str.isupper, str.isdigit)
    return len(value) >= 24 and all(any(kind(c) for c in value) for kind in kinds)
