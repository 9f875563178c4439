from typing import Any

PRICES = {"apple": 120, "bread": 250, "cheese": 480, "coffee": 900, "milk": 99, "tea": 350}
COUPONS = {
    "SAVE10": {"percent": 10, "min_subtotal": 1000},
    "SAVE25": {"percent": 25, "min_subtotal": 3000},
}
MAX_LINE_QTY = 5
MAX_LINES = 4
FREE_SHIPPING_FROM = 2000
SHIPPING_FEE = 299


class CartService:
    """Shopping carts with per-line quantity limits, coupons and shipping.

    Prices are in cents. A coupon is accepted only if the subtotal reaches its minimum, and it
    silently stops applying while the subtotal is below that minimum. Shipping is free when
    the discounted total reaches FREE_SHIPPING_FROM.
    """

    def __init__(self) -> None:
        self.carts: dict[str, dict[str, int]] = {}  # user_id -> {product: quantity}
        self.coupons: dict[str, str] = {}  # user_id -> coupon code
        self.orders = 0

    def _subtotal(self, user_id: str) -> int:
        lines = self.carts.get(user_id, {})
        return sum(PRICES[product] * qty for product, qty in lines.items())

    def add_item(self, user_id: str, product: str, qty: int) -> dict[str, Any]:
        if product not in PRICES:
            return {"error": {"code": "UNKNOWN_PRODUCT", "message": product}}
        if qty < 1:
            return {"error": {"code": "INVALID_QUANTITY", "message": str(qty)}}
        lines = self.carts.setdefault(user_id, {})
        if product not in lines and len(lines) >= MAX_LINES:
            return {"error": {"code": "CART_FULL", "message": str(len(lines))}}
        new_qty = lines.get(product, 0) + qty
        if new_qty > MAX_LINE_QTY:
            return {"error": {"code": "LINE_LIMIT", "message": str(new_qty)}}
        lines[product] = new_qty
        return {"user_id": user_id, "product": product, "qty": new_qty, "lines": len(lines)}

    def remove_item(self, user_id: str, product: str, qty: int) -> dict[str, Any]:
        lines = self.carts.get(user_id, {})
        if product not in lines:
            return {"error": {"code": "NOT_IN_CART", "message": product}}
        if qty < 1:
            return {"error": {"code": "INVALID_QUANTITY", "message": str(qty)}}
        left = lines[product] - qty
        if left <= 0:
            del lines[product]
            left = 0
        else:
            lines[product] = left
        return {"user_id": user_id, "product": product, "qty": left, "lines": len(lines)}

    def apply_coupon(self, user_id: str, code: str) -> dict[str, Any]:
        if code not in COUPONS:
            return {"error": {"code": "UNKNOWN_COUPON", "message": code}}
        subtotal = self._subtotal(user_id)
        if subtotal < COUPONS[code]["min_subtotal"]:
            return {"error": {"code": "COUPON_NOT_ELIGIBLE", "message": str(subtotal)}}
        self.coupons[user_id] = code
        return {"user_id": user_id, "coupon": code}

    def quote(self, user_id: str) -> dict[str, Any]:
        subtotal = self._subtotal(user_id)
        discount = 0
        code = self.coupons.get(user_id)
        if code is not None and subtotal >= COUPONS[code]["min_subtotal"]:
            discount = subtotal * COUPONS[code]["percent"] // 100
        shipping = SHIPPING_FEE
        if subtotal == 0 or subtotal - discount >= FREE_SHIPPING_FROM:
            shipping = 0
        total = subtotal - discount + shipping
        return {
            "user_id": user_id,
            "subtotal": subtotal,
            "discount": discount,
            "shipping": shipping,
            "total": total,
        }

    def checkout(self, user_id: str) -> dict[str, Any]:
        if not self.carts.get(user_id):
            return {"error": {"code": "EMPTY_CART", "message": user_id}}
        total = self.quote(user_id)["total"]
        self.orders += 1
        self.carts[user_id] = {}
        self.coupons.pop(user_id, None)
        return {"order_id": f"order{self.orders}", "user_id": user_id, "total": total}
