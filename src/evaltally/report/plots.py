"""PNG figures (matplotlib, Agg backend: no display needed, safe in CI and over SSH)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

PROTOCOL_ORDER = ("answers_revealed", "no_feedback", "free_rollout")


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (headless)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _protocols(groups: Sequence[Mapping[str, Any]]) -> list[str]:
    present = {g["protocol"] for g in groups}
    return [p for p in PROTOCOL_ORDER if p in present] + sorted(present - set(PROTOCOL_ORDER))


def vm_by_index(groups: Sequence[Mapping[str, Any]], out: Path) -> Path:
    """One panel per protocol: value match by future-call position, one line per model."""
    plt = pyplot()
    protocols = _protocols(groups)
    fig, axes = plt.subplots(
        1, len(protocols), figsize=(4.5 * len(protocols), 3.6), sharey=True, squeeze=False
    )
    for ax, protocol in zip(axes[0], protocols, strict=True):
        for g in groups:
            if g["protocol"] != protocol:
                continue
            xs = [i + 1 for i, _ in g["vm_by_index"]]
            ys = [100 * v for _, v in g["vm_by_index"]]
            ax.plot(xs, ys, marker=".", linewidth=1.2, label=g["model"])
        ax.set_title(protocol.replace("_", " "))
        ax.set_xlabel("future call (1-based)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("value match, % of scenarios")
    axes[0][-1].legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def effect_vm_intervals(groups: Sequence[Mapping[str, Any]], out: Path) -> Path:
    """Effect-step VM with 95% intervals, grouped by protocol, one bar per model."""
    plt = pyplot()
    protocols = _protocols(groups)
    models = list(dict.fromkeys(g["model"] for g in groups))
    width = 0.8 / max(1, len(models))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(protocols) * max(1, len(models)) / 2), 3.8))
    for k, model in enumerate(models):
        xs, ys, lo, hi = [], [], [], []
        for p, protocol in enumerate(protocols):
            g = next((g for g in groups if g["model"] == model and g["protocol"] == protocol), None)
            cell = g["summary"]["metrics"]["effect_step_vm"] if g else None
            if not cell or cell["value"] is None:
                continue
            v = 100 * cell["value"]
            xs.append(p + (k - (len(models) - 1) / 2) * width)
            ys.append(v)
            lo.append(v - 100 * (cell["ci_low"] if cell["ci_low"] is not None else cell["value"]))
            hi.append(100 * (cell["ci_high"] if cell["ci_high"] is not None else cell["value"]) - v)
        ax.bar(xs, ys, width=width, yerr=[lo, hi], capsize=3, label=model)
    ax.set_xticks(range(len(protocols)), [p.replace("_", " ") for p in protocols])
    ax.set_ylabel("effect-step value match, %")
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
