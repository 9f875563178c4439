"""`tally view`: a local, read-only web page over one or more runs (docs/view.md)."""

from evaltally.view.server import LOOPBACK, is_loopback, serve

__all__ = ["LOOPBACK", "is_loopback", "serve"]
