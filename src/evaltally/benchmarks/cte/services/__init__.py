"""Our own CTE service sources, shipped as package data.

Each ``<domain>.py`` here is one plain service class whose *text* is shown to models and
executed by ``evaltally.benchmarks.cte.executor`` (it is trusted package code). The files are
importable too, which is what lets mypy and ruff check them, but nothing imports them at run
time: the executor always loads a service from its source text so an edited copy behaves
exactly like the shipped one.
"""

from __future__ import annotations

from pathlib import Path

#: The six domains, in the order records are emitted (the order of the official file).
DOMAINS: tuple[str, ...] = ("auth", "bank", "cart", "filesystem", "ratelimiter", "reservation")

_HERE = Path(__file__).resolve().parent


def service_path(domain: str) -> Path:
    """The file holding ``domain``'s service source."""
    if domain not in DOMAINS:
        raise KeyError(f"unknown CTE service domain {domain!r}; expected one of {DOMAINS}")
    return _HERE / f"{domain}.py"


def service_source(domain: str) -> str:
    """The unedited source text of ``domain``'s service, exactly as shipped."""
    return service_path(domain).read_text(encoding="utf-8")
