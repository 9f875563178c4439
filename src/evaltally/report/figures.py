"""matplotlib for report figures: the Agg backend (no display needed, safe in CI and over SSH),
imported only when a report draws."""

from __future__ import annotations

from typing import Any


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
