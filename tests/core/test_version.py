"""`tally --version` prints the installed distribution's version."""

from __future__ import annotations

from importlib.metadata import version

from testkit import tally


def test_version_flag_prints_the_installed_version() -> None:
    done = tally("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"evaltally {version('evaltally')}"
