from typing import Any

MAX_COST = 3
STRIKES_TO_BAN = 3
BAN_TICKS = 6


class RateLimiter:
    """Fixed-window rate limiter with strikes and temporary bans, on a logical clock.

    Window number w covers clock values w*window .. w*window + window - 1. Each client may
    spend `limit` units per window. Every rejected request is a strike; STRIKES_TO_BAN
    strikes ban the client for BAN_TICKS ticks and reset its strikes.
    """

    def __init__(self, limit: int = 5, window: int = 10) -> None:
        self.limit = limit
        self.window = window
        self.clock = 0
        self.counters: dict[str, int] = {}  # "client:window_number" -> units spent
        self.strikes: dict[str, int] = {}  # client -> rejected requests since last ban
        self.banned_until: dict[str, int] = {}  # client -> clock at which the ban ends

    def _key(self, client: str) -> str:
        return f"{client}:{self.clock // self.window}"

    def advance_clock(self, delta: int) -> dict[str, Any]:
        if delta < 0:
            return {"error": {"code": "NEGATIVE_DELTA"}}
        self.clock += delta
        current = self.clock // self.window
        # Counters of finished windows can never be read again: drop them.
        for key in list(self.counters):
            if int(key.split(":")[1]) < current:
                del self.counters[key]
        return {"clock": self.clock, "window": current}

    def hit(self, client: str, cost: int) -> dict[str, Any]:
        if cost < 1 or cost > MAX_COST:
            return {"error": {"code": "INVALID_COST", "message": str(cost)}}
        banned_until = self.banned_until.get(client, 0)
        if self.clock < banned_until:
            return {"error": {"code": "BANNED", "message": str(banned_until - self.clock)}}
        key = self._key(client)
        spent = self.counters.get(key, 0)
        if spent + cost > self.limit:
            strikes = self.strikes.get(client, 0) + 1
            if strikes >= STRIKES_TO_BAN:
                self.banned_until[client] = self.clock + BAN_TICKS
                strikes = 0
            self.strikes[client] = strikes
            return {
                "allowed": False,
                "client": client,
                "remaining": self.limit - spent,
                "strikes": strikes,
            }
        self.counters[key] = spent + cost
        return {"allowed": True, "client": client, "remaining": self.limit - spent - cost}

    def status(self, client: str) -> dict[str, Any]:
        spent = self.counters.get(self._key(client), 0)
        remaining = self.limit - spent
        if remaining < 0:
            remaining = 0
        banned = self.clock < self.banned_until.get(client, 0)
        resets_in = self.window - self.clock % self.window
        return {
            "client": client,
            "spent": spent,
            "remaining": remaining,
            "banned": banned,
            "resets_in": resets_in,
        }

    def pardon(self, client: str) -> dict[str, Any]:
        strikes = self.strikes.get(client, 0)
        banned = self.clock < self.banned_until.get(client, 0)
        if strikes == 0 and not banned:
            return {"error": {"code": "NOTHING_TO_PARDON", "message": client}}
        self.strikes[client] = 0
        self.banned_until.pop(client, None)
        return {"client": client, "pardoned": True, "strikes_cleared": strikes}
