"""Gold provenance: which steps operate on or reveal a gold object (docs/scae.md)."""

from __future__ import annotations

import pytest

from evaltally.benchmarks.scae.episodes import Step, example_path, load_episodes
from evaltally.benchmarks.scae.provenance import (
    episode_provenance,
    names,
    path_tokens,
    step_provenance,
)

GOLD = ("src/pkg/mod.py", "setup.py")


@pytest.mark.parametrize(
    ("name", "gold", "expected"),
    [
        ("src/pkg/mod.py", "src/pkg/mod.py", True),
        ("./src/pkg/mod.py", "src/pkg/mod.py", True),
        ("/testbed/src/pkg/mod.py", "src/pkg/mod.py", True),
        ("a/src/pkg/mod.py", "src/pkg/mod.py", True),
        ("xsrc/pkg/mod.py", "src/pkg/mod.py", False),
        ("src/pkg/mod.pyc", "src/pkg/mod.py", False),
        ("pkg/mod.py", "src/pkg/mod.py", False),
        ("setup.py", "setup.py", True),
        ("docs/setup.py", "setup.py", False),  # a top-level gold object matches only itself
    ],
)
def test_names_matches_whole_paths_only(name: str, gold: str, expected: bool) -> None:
    assert names(name, gold) is expected


def test_path_tokens_stop_at_line_numbers_quotes_and_sentence_ends() -> None:
    out = "src/pkg/mod.py:12: x = 'setup.py'\nSee ./src/pkg/other.py. (docs/a.md)"
    assert path_tokens(out) >= {"src/pkg/mod.py", "setup.py", "./src/pkg/other.py", "docs/a.md"}
    assert "12" in path_tokens(out) and "src/pkg/mod.py:12" not in path_tokens(out)


def test_a_step_operates_on_its_target_and_reveals_what_its_output_names() -> None:
    read = Step("read", "./src/pkg/mod.py", "def f(): pass")
    assert step_provenance(read, GOLD).operates and step_provenance(read, GOLD).reveals == 0
    hits = Step("search", "f(", "src/pkg/mod.py:3: f()\nsetup.py:9: f()\nsrc/pkg/mod.py:7: f()")
    prov = step_provenance(hits, GOLD)
    assert not prov.operates and prov.reveals == 2 and prov.gold
    handler = Step("submit", None, "nothing named")
    assert not step_provenance(handler, GOLD).gold


def test_explicit_mentions_replace_the_text_scan() -> None:
    step = Step("search", "q", "src/pkg/mod.py is here", mentions=())
    assert step_provenance(step, GOLD).reveals == 0
    step = Step("search", "q", "2 matches", mentions=("setup.py", "docs/x.md"))
    assert step_provenance(step, GOLD).reveals == 1


def test_example_set_provenance_per_step() -> None:
    episodes = {e.id: e for e in load_episodes(example_path())}

    def code(eid: str) -> str:
        return "".join(
            ("O" if p.operates else "-") + str(p.reveals) for p in episode_provenance(episodes[eid])
        )

    assert code("ledgerkit-101") == "-0-1-1O0-0-1"  # a comment in money.py names rounding.py
    assert code("tinyhttp-15") == "-1O0-0-1"  # /testbed/ prefix in the search output
    assert code("pixelpipe-9") == "-1O0-1O0-0-0-0-2"  # ./ target; bare file names do not count
    assert code("ledgerkit-115") == "-1-0O0-1"  # explicit mentions
    assert code("confparse-21") == "-0-0-0-0-0-0"
    all_steps = [p for e in episodes.values() for p in episode_provenance(e)]
    assert (len(all_steps), sum(p.gold for p in all_steps)) == (93, 52)
