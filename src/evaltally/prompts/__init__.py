"""Prompt rendering per benchmark protocol. Each module carries a version string that is
written into every planned call's spec, so a changed wording yields new call ids and the
ledger and exports always say which wording produced an answer."""
