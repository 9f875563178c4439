from typing import Any

OVERDRAFT_LIMIT = 100
SAVINGS_WITHDRAWALS = 3
TRANSFER_CAP = 500
MAX_STATEMENT = 5


class BankLedger:
    """Checking and savings accounts kept as balances plus an append-only ledger.

    Amounts are whole units. Checking may go down to -OVERDRAFT_LIMIT; savings never below
    zero and allows SAVINGS_WITHDRAWALS withdrawals in total. Transfers never use the
    overdraft and move at most TRANSFER_CAP. A frozen account accepts no money movement.
    """

    def __init__(self) -> None:
        # account_id -> {"kind", "balance", "withdrawals", "frozen"}
        self.accounts: dict[str, dict[str, Any]] = {}
        # every balance change: {"entry", "account_id", "delta"}
        self.entries: list[dict[str, Any]] = []

    def _post(self, account_id: str, delta: int) -> int:
        self.accounts[account_id]["balance"] += delta
        self.entries.append(
            {"entry": len(self.entries) + 1, "account_id": account_id, "delta": delta}
        )
        return len(self.entries)

    def _usable(self, account_id: str) -> dict[str, Any] | None:
        if account_id not in self.accounts:
            return {"error": {"code": "ACCOUNT_NOT_FOUND", "message": account_id}}
        if self.accounts[account_id]["frozen"]:
            return {"error": {"code": "ACCOUNT_FROZEN", "message": account_id}}
        return None

    def open_account(self, account_id: str, kind: str) -> dict[str, Any]:
        if account_id in self.accounts:
            return {"error": {"code": "ACCOUNT_EXISTS", "message": account_id}}
        if kind != "checking" and kind != "savings":
            return {"error": {"code": "UNKNOWN_KIND", "message": kind}}
        self.accounts[account_id] = {"kind": kind, "balance": 0, "withdrawals": 0, "frozen": False}
        return {"account_id": account_id, "kind": kind, "balance": 0}

    def deposit(self, account_id: str, amount: int) -> dict[str, Any]:
        problem = self._usable(account_id)
        if problem is not None:
            return problem
        if amount <= 0:
            return {"error": {"code": "INVALID_AMOUNT", "message": str(amount)}}
        entry = self._post(account_id, amount)
        return {
            "account_id": account_id,
            "balance": self.accounts[account_id]["balance"],
            "entry": entry,
        }

    def withdraw(self, account_id: str, amount: int) -> dict[str, Any]:
        problem = self._usable(account_id)
        if problem is not None:
            return problem
        if amount <= 0:
            return {"error": {"code": "INVALID_AMOUNT", "message": str(amount)}}
        account = self.accounts[account_id]
        if account["kind"] == "savings":
            if account["withdrawals"] >= SAVINGS_WITHDRAWALS:
                return {"error": {"code": "WITHDRAWAL_LIMIT", "message": account_id}}
            floor = 0
        else:
            floor = -OVERDRAFT_LIMIT
        if account["balance"] - amount < floor:
            available = account["balance"] - floor
            return {"error": {"code": "INSUFFICIENT_FUNDS", "message": str(available)}}
        account["withdrawals"] += 1
        entry = self._post(account_id, -amount)
        return {"account_id": account_id, "balance": account["balance"], "entry": entry}

    def transfer(self, from_id: str, to_id: str, amount: int) -> dict[str, Any]:
        if from_id == to_id:
            return {"error": {"code": "SAME_ACCOUNT", "message": from_id}}
        for account_id in (from_id, to_id):
            problem = self._usable(account_id)
            if problem is not None:
                return problem
        if amount <= 0:
            return {"error": {"code": "INVALID_AMOUNT", "message": str(amount)}}
        if amount > TRANSFER_CAP:
            return {"error": {"code": "OVER_TRANSFER_CAP", "message": str(amount)}}
        if self.accounts[from_id]["balance"] < amount:
            balance = self.accounts[from_id]["balance"]
            return {"error": {"code": "INSUFFICIENT_FUNDS", "message": str(balance)}}
        self._post(from_id, -amount)
        self._post(to_id, amount)
        return {
            "from_balance": self.accounts[from_id]["balance"],
            "to_balance": self.accounts[to_id]["balance"],
        }

    def freeze(self, account_id: str) -> dict[str, Any]:
        if account_id not in self.accounts:
            return {"error": {"code": "ACCOUNT_NOT_FOUND", "message": account_id}}
        self.accounts[account_id]["frozen"] = True
        return {"account_id": account_id, "frozen": True}

    def unfreeze(self, account_id: str) -> dict[str, Any]:
        if account_id not in self.accounts:
            return {"error": {"code": "ACCOUNT_NOT_FOUND", "message": account_id}}
        self.accounts[account_id]["frozen"] = False
        return {"account_id": account_id, "frozen": False}

    def balance(self, account_id: str) -> dict[str, Any]:
        if account_id not in self.accounts:
            return {"error": {"code": "ACCOUNT_NOT_FOUND", "message": account_id}}
        account = self.accounts[account_id]
        return {"account_id": account_id, "kind": account["kind"], "balance": account["balance"]}

    def statement(self, account_id: str, count: int) -> dict[str, Any]:
        if account_id not in self.accounts:
            return {"error": {"code": "ACCOUNT_NOT_FOUND", "message": account_id}}
        if count < 1 or count > MAX_STATEMENT:
            return {"error": {"code": "INVALID_COUNT", "message": str(count)}}
        mine = [e["delta"] for e in self.entries if e["account_id"] == account_id]
        return {"account_id": account_id, "last": mine[-count:]}
