from typing import Any

MIN_PASSWORD_LENGTH = 6
MAX_FAILED_LOGINS = 3
LOCKOUT_TICKS = 5
MAX_TTL = 20
REFRESH_WINDOW = 2
MAX_SESSIONS = 3


class AuthService:
    """Password logins that issue session tokens which expire on a logical clock.

    A token is valid while clock < expires_at. MAX_FAILED_LOGINS wrong passwords in a row
    lock the account for LOCKOUT_TICKS ticks. A token can be refreshed only during its last
    REFRESH_WINDOW ticks, and a user holds at most MAX_SESSIONS valid tokens at a time.
    """

    def __init__(self) -> None:
        # user_id -> {"password", "failures", "locked_until"}
        self.users: dict[str, dict[str, Any]] = {}
        # token -> {"user_id", "expires_at"}; expired tokens stay until logout
        self.tokens: dict[str, dict[str, Any]] = {}
        self.clock = 0
        self.issued = 0

    def advance_clock(self, delta: int) -> dict[str, Any]:
        if delta < 0:
            return {"error": {"code": "NEGATIVE_DELTA"}}
        self.clock += delta
        return {"clock": self.clock}

    def _valid_tokens(self, user_id: str) -> list[str]:
        return [
            token
            for token, info in self.tokens.items()
            if info["user_id"] == user_id and self.clock < info["expires_at"]
        ]

    def register(self, user_id: str, password: str) -> dict[str, Any]:
        if user_id in self.users:
            return {"error": {"code": "USER_EXISTS", "message": user_id}}
        if len(password) < MIN_PASSWORD_LENGTH:
            return {"error": {"code": "WEAK_PASSWORD", "message": str(len(password))}}
        self.users[user_id] = {"password": password, "failures": 0, "locked_until": 0}
        return {"user_id": user_id, "registered": True}

    def login(self, user_id: str, password: str, ttl: int) -> dict[str, Any]:
        user = self.users.get(user_id)
        if user is None:
            return {"error": {"code": "USER_NOT_FOUND", "message": user_id}}
        if self.clock < user["locked_until"]:
            return {"error": {"code": "ACCOUNT_LOCKED", "message": str(user["locked_until"])}}
        if password != user["password"]:
            user["failures"] += 1
            if user["failures"] >= MAX_FAILED_LOGINS:
                user["failures"] = 0
                user["locked_until"] = self.clock + LOCKOUT_TICKS
                return {"error": {"code": "ACCOUNT_LOCKED", "message": str(user["locked_until"])}}
            return {"error": {"code": "BAD_PASSWORD", "message": str(user["failures"])}}
        if ttl < 1 or ttl > MAX_TTL:
            return {"error": {"code": "INVALID_TTL", "message": str(ttl)}}
        if len(self._valid_tokens(user_id)) >= MAX_SESSIONS:
            return {"error": {"code": "TOO_MANY_SESSIONS", "message": user_id}}
        user["failures"] = 0
        self.issued += 1
        token = f"tok{self.issued}"
        self.tokens[token] = {"user_id": user_id, "expires_at": self.clock + ttl}
        return {"token": token, "user_id": user_id, "expires_at": self.clock + ttl}

    def validate(self, token: str) -> dict[str, Any]:
        info = self.tokens.get(token)
        if info is None:
            return {"error": {"code": "TOKEN_NOT_FOUND", "message": token}}
        if self.clock >= info["expires_at"]:
            return {"error": {"code": "TOKEN_EXPIRED", "message": token}}
        remaining = info["expires_at"] - self.clock
        return {"token": token, "user_id": info["user_id"], "remaining": remaining}

    def refresh(self, token: str, ttl: int) -> dict[str, Any]:
        info = self.tokens.get(token)
        if info is None:
            return {"error": {"code": "TOKEN_NOT_FOUND", "message": token}}
        if self.clock >= info["expires_at"]:
            return {"error": {"code": "TOKEN_EXPIRED", "message": token}}
        if ttl < 1 or ttl > MAX_TTL:
            return {"error": {"code": "INVALID_TTL", "message": str(ttl)}}
        if info["expires_at"] - self.clock > REFRESH_WINDOW:
            return {"error": {"code": "TOO_EARLY", "message": str(info["expires_at"])}}
        info["expires_at"] = self.clock + ttl
        return {"token": token, "expires_at": info["expires_at"]}

    def logout(self, token: str) -> dict[str, Any]:
        if token not in self.tokens:
            return {"error": {"code": "TOKEN_NOT_FOUND", "message": token}}
        del self.tokens[token]
        return {"token": token, "logged_out": True}

    def sessions(self, user_id: str) -> dict[str, Any]:
        if user_id not in self.users:
            return {"error": {"code": "USER_NOT_FOUND", "message": user_id}}
        return {"user_id": user_id, "tokens": self._valid_tokens(user_id)}
