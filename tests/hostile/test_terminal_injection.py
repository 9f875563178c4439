"""Terminal injection (issue 23, item 7): escape sequences in a provider's error text reached
stderr raw: a cleared screen, a forged summary line, an OSC 8 link, an OSC 52 clipboard write.
Everything `tally` prints now shows control characters as escapes (`\\x1b`)."""

from __future__ import annotations

from pathlib import Path

from hostile_kit import Model, run_and_inspect, write_hostile_config
from hostile_server import Answer, HostileServer, Seen, completion, error_body

EVIL = (
    "\x1b[2J\x1b[H"  # clear the screen, cursor home
    "\rall 3 calls ok\n"  # a forged summary line
    "\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07"  # OSC 8 link
    "\x1b]52;c;ZXZpbA==\x07"  # OSC 52: write "evil" to the clipboard
    "\x9b31m\u202eevil"  # C1 CSI, a right-to-left override
)
RAW = ("\x1b", "\x9b", "\x07", "\u202e", "\r")


def answer(seen: Seen) -> Answer:
    json = [("content-type", "application/json")]
    if seen.mentions("answer"):
        return Answer(headers=json, body=completion(seen.dialect, f"answer {EVIL}"))
    status = 400 if seen.mentions("bad") else 401 if seen.mentions("auth") else 503
    return Answer(status, json, error_body(EVIL))


def test_provider_text_reaches_no_terminal_raw(tmp_path: Path) -> None:
    models = [
        Model("bad", "openai", "bad"),
        Model("auth", "anthropic", "auth"),
        Model("busy", "gemini", "busy"),
        Model("answer", "openai", "answer"),
    ]
    with HostileServer(answer) as server:
        session = run_and_inspect(write_hostile_config(tmp_path, server.base_url, models))
    for name, text in session.outputs.items():
        for char in RAW:
            assert char not in text, (name, repr(char), text)
    shown = session.outputs["run stderr"] + session.outputs["run stdout"]
    assert "\\x1b[2J\\x1b[H" in shown and "\\x1b]52;c;ZXZpbA==" in shown, shown
    assert session.rows()["answer"]["raw_text"] == f"answer {EVIL}"  # the data is kept as sent
