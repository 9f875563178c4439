"""CTXGAP: how much of a coding task's state observers recover from different views of it.

Users bring their own probes (`docs/ctxgap.md` is the input format). Each probe is asked of an
observer model once per view of its checkpoint, and a judge model scores every answer against
the probe's reference; the statistics (importance-weighted accuracy per view, the gap between
two views, a paired task-cluster bootstrap) are pure functions over those scored units.
"""
