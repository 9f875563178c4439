from typing import Any

QUOTA = 1000
MAX_DEPTH = 3


class FileSystem:
    """An in-memory tree of directories and files addressed by absolute paths.

    Only file sizes are stored (no contents). The sum of all file sizes may not exceed QUOTA.
    Paths have at most MAX_DEPTH components. Each file records the clock of its last write.
    """

    def __init__(self) -> None:
        # path -> {"kind": "dir"|"file", "size", "mtime"}; "/" is the root directory
        self.nodes: dict[str, dict[str, Any]] = {"/": {"kind": "dir", "size": 0, "mtime": 0}}
        self.used = 0
        self.clock = 0

    def _parent(self, path: str) -> str:
        return path.rsplit("/", 1)[0] or "/"

    def _check_new(self, path: str) -> dict[str, Any] | None:
        if path.count("/") > MAX_DEPTH:
            return {"error": {"code": "PATH_TOO_DEEP", "message": path}}
        parent = self.nodes.get(self._parent(path))
        if parent is None:
            return {"error": {"code": "PARENT_NOT_FOUND", "message": self._parent(path)}}
        if parent["kind"] != "dir":
            return {"error": {"code": "NOT_A_DIRECTORY", "message": self._parent(path)}}
        return None

    def advance_clock(self, delta: int) -> dict[str, Any]:
        if delta < 0:
            return {"error": {"code": "NEGATIVE_DELTA"}}
        self.clock += delta
        return {"clock": self.clock}

    def mkdir(self, path: str) -> dict[str, Any]:
        problem = self._check_new(path)
        if problem is not None:
            return problem
        if path in self.nodes:
            return {"error": {"code": "ALREADY_EXISTS", "message": path}}
        self.nodes[path] = {"kind": "dir", "size": 0, "mtime": self.clock}
        return {"path": path, "kind": "dir"}

    def write(self, path: str, size: int) -> dict[str, Any]:
        if size < 0:
            return {"error": {"code": "INVALID_SIZE", "message": str(size)}}
        problem = self._check_new(path)
        if problem is not None:
            return problem
        old = self.nodes.get(path, {"kind": "file", "size": 0})
        if old["kind"] == "dir":
            return {"error": {"code": "IS_A_DIRECTORY", "message": path}}
        if self.used - old["size"] + size > QUOTA:
            return {"error": {"code": "QUOTA_EXCEEDED", "message": str(self.used)}}
        self.used += size - old["size"]
        self.nodes[path] = {"kind": "file", "size": size, "mtime": self.clock}
        return {"path": path, "size": size, "used": self.used}

    def append(self, path: str, size: int) -> dict[str, Any]:
        node = self.nodes.get(path)
        if node is None:
            return {"error": {"code": "NOT_FOUND", "message": path}}
        if node["kind"] == "dir":
            return {"error": {"code": "IS_A_DIRECTORY", "message": path}}
        if size <= 0:
            return {"error": {"code": "INVALID_SIZE", "message": str(size)}}
        if self.used + size > QUOTA:
            return {"error": {"code": "QUOTA_EXCEEDED", "message": str(self.used)}}
        self.used += size
        node["size"] += size
        node["mtime"] = self.clock
        return {"path": path, "size": node["size"], "used": self.used}

    def stat(self, path: str) -> dict[str, Any]:
        node = self.nodes.get(path)
        if node is None:
            return {"error": {"code": "NOT_FOUND", "message": path}}
        return {"path": path, "kind": node["kind"], "size": node["size"], "mtime": node["mtime"]}

    def listdir(self, path: str) -> dict[str, Any]:
        node = self.nodes.get(path)
        if node is None:
            return {"error": {"code": "NOT_FOUND", "message": path}}
        if node["kind"] != "dir":
            return {"error": {"code": "NOT_A_DIRECTORY", "message": path}}
        names = sorted(
            p.rsplit("/", 1)[1] for p in self.nodes if p != "/" and self._parent(p) == path
        )
        return {"path": path, "names": names}

    def delete(self, path: str) -> dict[str, Any]:
        if path == "/":
            return {"error": {"code": "CANNOT_DELETE_ROOT"}}
        node = self.nodes.get(path)
        if node is None:
            return {"error": {"code": "NOT_FOUND", "message": path}}
        children = [p for p in self.nodes if p != "/" and self._parent(p) == path]
        if node["kind"] == "dir" and children:
            return {"error": {"code": "DIRECTORY_NOT_EMPTY", "message": path}}
        self.used -= node["size"]
        del self.nodes[path]
        return {"path": path, "deleted": True, "used": self.used}

    def recent(self, max_age: int) -> dict[str, Any]:
        if max_age < 0:
            return {"error": {"code": "INVALID_AGE", "message": str(max_age)}}
        paths = sorted(
            p
            for p, n in self.nodes.items()
            if n["kind"] == "file" and self.clock - n["mtime"] <= max_age
        )
        return {"clock": self.clock, "paths": paths}

    def usage(self) -> dict[str, Any]:
        files = sum(1 for n in self.nodes.values() if n["kind"] == "file")
        return {"used": self.used, "free": QUOTA - self.used, "files": files}
