"""Whether a lane's 429s come from a limit its rate runs into, or from the provider's capacity.

Pure, with the time passed in, like pacing.py (tests/core/test_refusals.py).

A limit refuses what is sent above it: cut the rate below the limit and its 429s stop. A
provider short of shared capacity (Gemini at busy hours, a router's upstream) refuses a share
of requests whatever their rate; pausing the lane and cutting its rate for each of those only
slows it (3 % of such 429s, each pausing the lane for its Retry-After and cutting the rate,
left a lane at ~5 requests/s for good). Most providers do not say which a 429 is
(adapters/http_errors.py reads it when they do), so the lane tests it: after a rate cut it
watches the 429s among the answers to requests sent once it resumed. Against a limit their
share falls to about nothing; if it stays at CAPACITY_RATIO or more of the share before the cut,
the 429s were not the rate's, the cut is undone, and from then on such 429s are retried on
their own. A share after the cut above MAX_CAPACITY_SHARE is never capacity either (the cut
was not deep enough). In capacity mode the rate climbs past the hold that the 429s set
(pacing.py `lift`), and should the share among answers to requests sent since the verdict climb
well above the share counted before them (a real limit reached, as the rate climbs back), the
judge says a limit answers (Verdict.LIMIT): the lane cuts as for a limit's 429 and stays in
capacity mode, and the next such verdict is read from answers to requests sent after the cut
(`limit_cut`). Leaving capacity mode there made every capacity 429 after it a limit's again,
each pausing the lane and cutting its rate. The 429s that made the lane cut are left out of
that share: read again right after the verdict, a run of them put the lane back under a limit
at once, and with its hold never lifted, a run of 429s amid capacity refusals left it slow for
good (docs/performance.md).

A lane that found a limit probes back up to it and is refused at about each step: a steady
small share that no cut makes fall, which read as capacity undid the cut (a 600/min lane went
unpaced and was refused everything in flight). So the answers to a refused step up (sent from
the step to the 429 that ended it), and a 429 at the rate such a step found (arrival jitter
puts one request too many in a window now and then), are the limit answering a probe: the test
of a lane that knows no limit leaves them out (`probed`; one pacing under a known limit only
goes back to 98 % of it on that verdict). The rest of a climbing lane's answers still count,
so a lane that climbs from a deep cut still reaches its verdict.

A lane that knew no limit may still be far above it after its first cut (a bucket that held
ten times its rate made it look fast): the 429s that follow within a second cut again, halving,
and they are the limit's answer to the rate being left, not to the rate under test. Read in the
test, four of them among its first hundred answers looked like a share that kept up, and the
lane, unpaced again, was refused everything in flight a second time. So such a cut restarts the
count (`recut`): the test measures the rate the lane settled on.

A lane that knows no limit takes its first 429 as one and cuts deep (to what it saw accepted),
which at a few percent of capacity refusals left it at a hundredth of its speed for the whole
test. But a limit refuses everything sent past it: what the lane sent right after the refused
request, still in flight when the 429 came back, is refused nearly as a whole (1 - L/r of it,
sending at r against a limit L). When at most SCATTERED_SHARE of the first MIN_SIBLINGS of those
answers were 429s, the refusal was scattered: the judge says so and the lane runs the test at
a shallow cut instead (pacing.DECREASE of what it was sending), under which a limit's share
still falls and a capacity share does not; meanwhile (`scattered`) a 429 holds only its own
request (a limit that refuses so few is at most a tenth above that rate). A first 429 among a
lane's first few requests has fewer than MIN_SIBLINGS sent with it: the judge then decides when
the lane's pause ends (`resumed`), scattered if at least one of them was answered and none was
refused (two 429s in a row are a limit's). Scattered ends as soon as more than
MAX_CAPACITY_SHARE of at least MIN_SIBLINGS answers after the resume are refused: a limit's
run of 429s pauses the lane again.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from enum import Enum

MIN_ANSWERS = 100
"""Answers after the cut before any verdict: at a few percent of 429s, fewer hold too few."""

MIN_REFUSED = 3
"""429s among them for a verdict of capacity (one or two stray ones are a limit's jitter)."""

MAX_ANSWERS = 400
"""Answers after the cut by which, without a verdict of capacity, the cut is taken to have
worked: the 429s were the limit's and the next cut starts a new test. A test whose share before
the cut is above MAX_CAPACITY_SHARE can reach no such verdict and ends at MIN_ANSWERS."""

CAPACITY_RATIO = 0.5
"""The share after the cut, as a part of the share before, at which it counts as not fallen.
A paced lane cut from r to c r against a limit L sees its share fall from s = 1 - L/r to
1 - (1 - s)/c; with s at most MAX_CAPACITY_SHARE and any cut to 0.9 r or deeper, that is under
half of s (at s = 15 %: 5.6 % against 7.5 %)."""

MAX_CAPACITY_SHARE = 0.15
"""A share of 429s above this before the cut is never judged capacity: a lane that far above a
limit must slow down, and a provider refusing that many for capacity is near an outage."""

WINDOW = 256
"""Answers the share before the cut, and the share in capacity mode, are counted over."""

PRIOR_ANSWERS = 32
"""Answers without a 429 added to the count before the cut: that count ends at the refusal
that caused the cut, so a first 429 among the first few answers would read as a large share
(1 of 5 is 20 %, above MAX_CAPACITY_SHARE) where 3 % of capacity refusals were behind it."""

RELAPSE_FACTOR = 2.0
RELAPSE_MARGIN = 0.02
RELAPSE_Z = 4.0
"""In capacity mode, a share over the last WINDOW answers (to requests sent since capacity was
found, at least MIN_ANSWERS of them) above RELAPSE_FACTOR times the share counted before them,
plus RELAPSE_MARGIN, and RELAPSE_Z standard errors above it, means a limit is being hit again.
Without the last condition, a count before them that chance had left low (13 of 724, where 3 %
were refused) relapsed at 15 of the next 256, 3.3 standard errors above it, and the lane was
cut as for a limit. A limit the lane climbs past by a step refuses a sixth of what it is sent:
over 4 standard errors above 3 % once 200 answers were counted before. Above
MAX_CAPACITY_SHARE is never capacity, however high the share counted before (a test run above
a limit counted some of its 429s as capacity, and a lane held 34 % above a 500/s limit)."""

MIN_SIBLINGS = 8
"""Answers to requests sent after a lane's first refused one, before it paused, that judge
whether that refusal was scattered (fewer: no verdict, the deep cut stands). A lane ramping up
at 30 ms of latency has 10-20 out at its first 429."""

SCATTERED_SHARE = 0.125
"""At most this share of 429s among them (1 of 8) reads as scattered: 3 % of capacity
refusals put 2 or more among 8 about once in fifty, while a limit refuses more than this
whenever the lane sends more than 1.14 times it."""


class Verdict(Enum):
    CAPACITY = "capacity"
    """The test found capacity: undo the tested cut."""
    SCATTERED = "scattered"
    """The first refusal of a lane that knew no limit was scattered: test at a shallow cut."""
    LIMIT = "limit"
    """In capacity mode, the share of 429s climbed well above the capacity share: a limit
    answers at this rate. Cut as for a limit's 429 and stay in capacity mode (`limit_cut`)."""


@dataclass
class RefusalJudge:
    capacity: bool = False
    """Whether 429s that say nothing of their cause are taken as capacity refusals."""
    answers: int = 0
    refused: int = 0
    """In capacity mode: answers, and 429s among them, since the test that found it (its own
    included), but for those to requests sent before `found_from` and the windows that found
    a limit."""
    measured: float = 0.0
    """The share of 429s the test that found capacity measured: the share counted before a
    relapse's window is taken as at most this plus RELAPSE_MARGIN."""
    found_from: float = float("-inf")
    """When capacity was found (the last request the test counted was sent): a relapse is read
    from answers to requests sent after it, not from the 429s that made the lane cut."""
    test_from: float | None = None
    """While a cut is being tested: when the lane resumed after it."""
    after: int = 0
    refused_after: int = 0
    unpaced: bool = False
    """Whether the test under way follows the first cut of a lane that knew no limit."""
    siblings_from: float | None = None
    """While a first refusal of a lane that knew no limit is judged: when it was sent."""
    siblings: int = 0
    refused_siblings: int = 0
    scattered: bool = False
    """Whether the test under way follows a scattered first refusal."""
    probes: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=8))
    """(from, to): sends of the lane's refused steps up, whose answers the test leaves out."""
    recent: deque[tuple[float, bool]] = field(default_factory=lambda: deque(maxlen=2 * WINDOW))
    """(sent at, refused) of the last answers (2xx or 429), oldest first."""

    @property
    def testing(self) -> bool:
        return self.test_from is not None

    def cut(self, resume_at: float, unpaced_refusal: float | None = None) -> bool:
        """The lane cut its rate for a 429 and resumes at `resume_at`; `unpaced_refusal`: when
        the refused request was sent, if the lane knew no limit then. Returns whether this
        cut opens a test (the lane keeps what to restore should it find capacity)."""
        if self.test_from is not None or self.capacity:
            return False
        self.test_from, self.after, self.refused_after = resume_at, 0, 0
        self.siblings_from, self.siblings, self.refused_siblings = unpaced_refusal, 0, 0
        self.unpaced = unpaced_refusal is not None
        self.scattered = False
        self.probes.clear()
        return True

    def recut(self, resume_at: float) -> None:
        """The lane cut again soon after the last cut (it was still far above the limit) and
        resumes at `resume_at`: a test that follows the first cut of a lane that knew no limit
        counts from there. A lane that knew its limit keeps its count: at a few percent of
        capacity refusals every such cut comes soon after the last, and restarted, its test
        would never reach a verdict."""
        if self.test_from is not None and self.unpaced:
            self.test_from, self.after, self.refused_after = resume_at, 0, 0

    def probed(self, start: float, end: float) -> None:
        """The lane's step up at `start` was refused at `end`: the answers to what it sent
        in between answered a probe of the limit, not the rate under test."""
        if self.test_from is None:
            return
        for sent, refused in self.recent:
            if sent >= self.test_from and start <= sent <= end:
                self.after -= 1
                self.refused_after -= refused
        self.probes.append((start, end))

    def resumed(self) -> Verdict | None:
        """The lane's pause after the first refusal being judged is over: it goes on at the
        deep cut unless what was answered of what was sent with that refusal says scattered."""
        if self.siblings_from is None:
            return None
        self.siblings_from = None
        self.scattered = self.siblings > 0 and self.refused_siblings <= (
            SCATTERED_SHARE * self.siblings
        )
        return Verdict.SCATTERED if self.scattered else None

    def answered(self, sent_at: float, refused: bool) -> Verdict | None:
        """An answer (2xx, or a 429 of any kind) to a request sent at `sent_at`, and what it
        concludes, if anything."""
        self.recent.append((sent_at, refused))
        if self.capacity:
            if sent_at <= self.found_from:  # sent at a rate already judged
                return None
            self.answers += 1
            self.refused += refused
            return Verdict.LIMIT if refused and self._relapsed() else None
        if self.test_from is None:
            return None
        if sent_at < self.test_from:
            return self._sibling(sent_at, refused)
        if any(start <= sent_at <= end for start, end in self.probes):
            return None
        self.after += 1
        self.refused_after += refused
        after = self.refused_after / self.after
        if self.scattered and self.after >= MIN_SIBLINGS and after > MAX_CAPACITY_SHARE:
            self.scattered = False  # a limit's run of 429s: they pause the lane again
        if self.after < MIN_ANSWERS:
            return None
        before = self._share_before(self.test_from)
        if (
            self.refused_after >= MIN_REFUSED
            and before <= MAX_CAPACITY_SHARE
            and CAPACITY_RATIO * before <= after <= MAX_CAPACITY_SHARE
        ):
            self.capacity, self.test_from, self.found_from = True, None, sent_at
            self.answers, self.refused = self.after, self.refused_after
            self.measured = after
            self.scattered = False
            return Verdict.CAPACITY
        if self.after >= MAX_ANSWERS or before > MAX_CAPACITY_SHARE:
            # No verdict of capacity can come from this test: the next cut starts another,
            # counting the share before it afresh. Run on to MAX_ANSWERS after a storm of a
            # limit's 429s, such a test held the lane in limit mode for 12 s, each capacity
            # 429 meanwhile pausing it for 1 s and cutting its rate (a 500/s limit: 90/s).
            self.test_from, self.scattered = None, False
        return None

    def _sibling(self, sent_at: float, refused: bool) -> Verdict | None:
        if self.siblings_from is None or sent_at <= self.siblings_from:
            return None
        self.siblings += 1
        self.refused_siblings += refused
        if self.siblings < MIN_SIBLINGS:
            return None
        self.siblings_from = None
        self.scattered = self.refused_siblings <= SCATTERED_SHARE * self.siblings
        return Verdict.SCATTERED if self.scattered else None

    def _share_before(self, start: float) -> float:
        before = [refused for sent, refused in self.recent if sent < start][-WINDOW:]
        return sum(before) / (len(before) + PRIOR_ANSWERS)

    def limit_cut(self, at: float) -> None:
        """The lane cut its rate at `at` for a limit found in capacity mode (Verdict.LIMIT): the
        next relapse is read from answers to requests sent after the cut, against the share
        counted before the window that relapsed (a limit's 429s are no capacity share)."""
        n, k = self.window()
        self.answers, self.refused = self.answers - n, self.refused - k
        self.found_from = at

    def window(self) -> tuple[int, int]:
        """Answers, and 429s among them, of the last WINDOW sent since `found_from`."""
        window = [refused for sent, refused in self.recent if sent > self.found_from][-WINDOW:]
        return len(window), sum(window)

    def _relapsed(self) -> bool:
        n, k = self.window()
        if n < MIN_ANSWERS:
            return False
        base_n, base_k = self.answers - n, self.refused - k
        # A lane held a little above a limit, by less than a relapse shows, adds that limit's
        # 429s to the share counted before the window; unbounded, the share crept up, no
        # relapse came, and a lane climbed to 2.8 x a 500/s limit.
        share, base = k / n, min(base_k / base_n, self.measured + RELAPSE_MARGIN)
        pooled = (k + base_k) / (n + base_n)
        spread = math.sqrt(pooled * (1 - pooled) * (1 / n + 1 / base_n))
        above = min(RELAPSE_FACTOR * base + RELAPSE_MARGIN, MAX_CAPACITY_SHARE)
        return share > above and share - base > RELAPSE_Z * spread
