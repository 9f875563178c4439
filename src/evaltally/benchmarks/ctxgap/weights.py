"""Category weights: `w_c = N_important_atoms(c) / N_probes(c)` (seed 003).

Counted over the probes of one analysis (those valid in all of its views), so every view of
the analysis is scored with identical weights. An atom is important when its importance is at
least 2; probes of one task that share an `atom_id` are one atom. A category without important
atoms weighs 0: its probes stay in the tables but move no accuracy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .data import IMPORTANT
from .units import Unit


@dataclass(frozen=True, slots=True)
class CategoryWeight:
    category: str
    n_probes: int
    n_important_atoms: int

    @property
    def weight(self) -> float:
        return self.n_important_atoms / self.n_probes


def category_weights(units: Iterable[Unit]) -> dict[str, CategoryWeight]:
    """Per category, in order of first appearance; each probe counts once whatever its views."""
    probes: dict[str, set[str]] = {}
    atoms: dict[str, set[tuple[str, str]]] = {}
    for u in units:
        probes.setdefault(u.category, set()).add(u.probe_id)
        important = atoms.setdefault(u.category, set())
        if u.importance >= IMPORTANT:
            important.add((u.task_id, u.atom_id))
    return {c: CategoryWeight(c, len(probes[c]), len(atoms[c])) for c in probes}
