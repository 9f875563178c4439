"""Gold provenance of each step: does it operate on or reveal a gold object?

The paper (§4.6, Fig. 6b) classes a step by whether it "operates on or reveals a gold file",
where revealing is execution provenance (§4.2): the object's path appears in what the tool
printed. Precisely (docs/scae.md, "Derived fields"):

- a *name* matches a gold object g when, after dropping leading `./`, it equals g, or — only
  when g itself has a directory part (contains `/`) — it ends with `/` + g (so
  `/testbed/src/a/b.py` and the diff path `a/src/a/b.py` name `src/a/b.py`, while a top-level
  gold `setup.py` is only matched by `setup.py` itself);
- step t *operates on* g when its target matches g;
- step t *reveals* g when its output names g: the step's `mentions` list when the episode gives
  one, else every path token of the output, a token being a maximal run of the characters
  `A-Z a-z 0-9 _ . - /` with trailing dots removed (`see src/a.py.` names `src/a.py`; the
  `:12:` of `src/a.py:12:` is not part of the token);
- step t has *gold provenance* when it operates on or reveals at least one gold object.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .episodes import Episode, Step, normalize_object

_TOKEN = re.compile(r"[A-Za-z0-9_.\-/]+")


@dataclass(frozen=True, slots=True)
class StepProvenance:
    """What one step did with the gold set: `operates` on a gold object, `reveals` how many."""

    operates: bool
    reveals: int

    @property
    def gold(self) -> bool:
        return self.operates or self.reveals > 0


def names(name: str, gold: str) -> bool:
    """Whether `name` (a target, a mention or an output token) names the gold object."""
    name = normalize_object(name)
    return name == gold or ("/" in gold and name.endswith("/" + gold))


def path_tokens(output: str) -> set[str]:
    """The path-like tokens of a tool's output (see the module docstring)."""
    return {t.rstrip(".") for t in _TOKEN.findall(output)} - {""}


def revealed(step: Step, gold: Sequence[str]) -> frozenset[str]:
    """The gold objects step's output names."""
    shown: Iterable[str] = step.mentions if step.mentions is not None else path_tokens(step.output)
    shown = tuple(shown)
    return frozenset(g for g in gold if any(names(s, g) for s in shown))


def step_provenance(step: Step, gold: Sequence[str]) -> StepProvenance:
    operates = step.target is not None and any(names(step.target, g) for g in gold)
    return StepProvenance(operates=operates, reveals=len(revealed(step, gold)))


def episode_provenance(episode: Episode) -> tuple[StepProvenance, ...]:
    return tuple(step_provenance(s, episode.gold) for s in episode.steps)
