from typing import Any

USER_QUOTA = 4
HOLD_TICKS = 3
MAX_CAPACITY = 12


class ReservationBook:
    """Bookable slots with seat capacity and a per-user seat quota, on a logical clock.

    A booking starts as a hold; a hold not confirmed within HOLD_TICKS ticks expires when the
    clock reaches its expires_at, and its seats are freed. Held and confirmed seats both count
    towards the slot's capacity and the user's USER_QUOTA.
    """

    def __init__(self) -> None:
        self.slots: dict[str, dict[str, int]] = {}  # slot_id -> {"capacity", "taken"}
        # booking_id -> {"user_id", "slot_id", "seats", "status", "expires_at"}
        # status: "held" | "confirmed" | "cancelled" | "expired"
        self.bookings: dict[str, dict[str, Any]] = {}
        self.clock = 0
        self.next_id = 1

    def _seats_in_use(self, user_id: str) -> int:
        return sum(
            b["seats"]
            for b in self.bookings.values()
            if b["user_id"] == user_id and (b["status"] == "held" or b["status"] == "confirmed")
        )

    def add_slot(self, slot_id: str, capacity: int) -> dict[str, Any]:
        if slot_id in self.slots:
            return {"error": {"code": "SLOT_EXISTS", "message": slot_id}}
        if capacity < 1 or capacity > MAX_CAPACITY:
            return {"error": {"code": "INVALID_CAPACITY", "message": str(capacity)}}
        self.slots[slot_id] = {"capacity": capacity, "taken": 0}
        return {"slot_id": slot_id, "capacity": capacity}

    def advance_clock(self, delta: int) -> dict[str, Any]:
        if delta < 0:
            return {"error": {"code": "NEGATIVE_DELTA"}}
        self.clock += delta
        expired = []
        for booking_id, b in self.bookings.items():
            if b["status"] == "held" and b["expires_at"] <= self.clock:
                b["status"] = "expired"
                self.slots[b["slot_id"]]["taken"] -= b["seats"]
                expired.append(booking_id)
        return {"clock": self.clock, "expired": expired}

    def hold(self, user_id: str, slot_id: str, seats: int) -> dict[str, Any]:
        if slot_id not in self.slots:
            return {"error": {"code": "SLOT_NOT_FOUND", "message": slot_id}}
        if seats < 1:
            return {"error": {"code": "INVALID_SEATS", "message": str(seats)}}
        in_use = self._seats_in_use(user_id)
        if in_use + seats > USER_QUOTA:
            return {"error": {"code": "QUOTA_EXCEEDED", "message": str(in_use)}}
        slot = self.slots[slot_id]
        if slot["taken"] + seats > slot["capacity"]:
            free = slot["capacity"] - slot["taken"]
            return {"error": {"code": "SOLD_OUT", "message": str(free)}}
        booking_id = f"b{self.next_id}"
        self.next_id += 1
        expires_at = self.clock + HOLD_TICKS
        self.bookings[booking_id] = {
            "user_id": user_id,
            "slot_id": slot_id,
            "seats": seats,
            "status": "held",
            "expires_at": expires_at,
        }
        slot["taken"] += seats
        return {
            "booking_id": booking_id,
            "slot_id": slot_id,
            "seats": seats,
            "expires_at": expires_at,
        }

    def confirm(self, booking_id: str) -> dict[str, Any]:
        b = self.bookings.get(booking_id)
        if b is None:
            return {"error": {"code": "BOOKING_NOT_FOUND", "message": booking_id}}
        if b["status"] == "confirmed":
            return {"error": {"code": "ALREADY_CONFIRMED", "message": booking_id}}
        if b["status"] != "held":
            return {"error": {"code": "NOT_HELD", "message": b["status"]}}
        b["status"] = "confirmed"
        return {"booking_id": booking_id, "status": "confirmed"}

    def cancel(self, booking_id: str) -> dict[str, Any]:
        b = self.bookings.get(booking_id)
        if b is None:
            return {"error": {"code": "BOOKING_NOT_FOUND", "message": booking_id}}
        if b["status"] != "held" and b["status"] != "confirmed":
            return {"error": {"code": "NOT_ACTIVE", "message": b["status"]}}
        b["status"] = "cancelled"
        self.slots[b["slot_id"]]["taken"] -= b["seats"]
        return {"booking_id": booking_id, "status": "cancelled", "seats_freed": b["seats"]}

    def quota(self, user_id: str) -> dict[str, Any]:
        in_use = self._seats_in_use(user_id)
        return {"user_id": user_id, "in_use": in_use, "left": USER_QUOTA - in_use}

    def slot(self, slot_id: str) -> dict[str, Any]:
        if slot_id not in self.slots:
            return {"error": {"code": "SLOT_NOT_FOUND", "message": slot_id}}
        s = self.slots[slot_id]
        return {
            "slot_id": slot_id,
            "capacity": s["capacity"],
            "taken": s["taken"],
            "free": s["capacity"] - s["taken"],
        }
