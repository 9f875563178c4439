"""The `tally` executable's start-up runs without the cyclic garbage collector.

Start-up (importing typer, rich, aiohttp and evaltally; parsing the command line)
makes some 10^5 objects that live as long as the process, and next to no garbage. The collector
walked them over and over: 60-110 ms of a one-call `tally run` (bench/fixed_cost.py). So `tally`
begins with it off (`begin`); when the command's work begins (`end`), what start-up made is
frozen (`gc.freeze`: never walked again) and collection resumes for everything the work makes.
"""

from __future__ import annotations

import gc

_paused = False


def begin() -> None:
    global _paused
    if not _paused and gc.isenabled():
        gc.disable()
        _paused = True


def end() -> None:
    """The command's work begins. Does nothing unless `begin` paused the collector (the CLI app
    run in-process, e.g. by a test, never pauses it)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
