"""Test-only: every request that reaches the app (but /stats/), as the app saw it, so a
test checks on the server's side what a converted scenario sent: method, path, query,
headers and the first bytes of the body. Kept in memory, at most MAX_KEPT requests (the
count per route goes on past that)."""

import threading

MAX_KEPT = 20_000
MAX_BODY = 8 * 1024

_lock = threading.Lock()
_kept = []
_counts = {}


def reset():
    with _lock:
        _kept.clear()
        _counts.clear()


def snapshot():
    """{"counts": {"METHOD /path": n}, "requests": [...]}."""
    with _lock:
        return {"counts": dict(_counts), "requests": list(_kept)}


class RecorderMiddleware:
    """Records the request before any view reads it (the body is read here, bounded,
    and stays readable: Django caches `request.body`)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith("/stats/"):
            try:
                body = request.body[:MAX_BODY].decode("utf-8", "replace")
            except Exception:  # a body over Django's own limit: record without it
                body = ""
            entry = {
                "method": request.method,
                "path": request.path,
                "query": request.META.get("QUERY_STRING", ""),
                "headers": {k.lower(): v for k, v in request.headers.items()},
                "body": body,
            }
            key = f"{request.method} {request.path}"
            with _lock:
                _counts[key] = _counts.get(key, 0) + 1
                if len(_kept) < MAX_KEPT:
                    _kept.append(entry)
        return self.get_response(request)
