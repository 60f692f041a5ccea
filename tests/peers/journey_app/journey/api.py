"""A small JSON API beside the HTML pages, the shape k6 scripts, OpenAPI documents,
Postman collections and .http files are written against: a token login, items a
logged-in user creates and reads, and /echo/ answering what it received. CSRF does not
apply (a bearer token is not sent by a browser on its own).

Tokens and items live in memory: the app is one process (waitress's threads), and the
tests read them back through /stats/requests/ and /stats/."""

import json
import secrets
import threading

from django.contrib.auth import authenticate
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

_lock = threading.Lock()
_tokens = {}  # token -> username
_items = {}  # id -> {"id", "name", "owner", ...}
_next_id = 1
_api_logins = {}  # username -> successful /api/login count

# What one request may carry (the recorder and the body readers keep no more).
MAX_BODY = 64 * 1024


def reset():
    """Test-only: forget tokens, items and the API login counts."""
    global _next_id
    with _lock:
        _tokens.clear()
        _items.clear()
        _api_logins.clear()
        _next_id = 1


def api_logins():
    """Successful /api/login per username."""
    with _lock:
        return dict(_api_logins)


def _body_json(request):
    """The JSON body, or None when there is none or it does not parse."""
    if len(request.body) > MAX_BODY:
        return None
    try:
        return json.loads(request.body or b"null")
    except ValueError:
        return None


def _credentials(request):
    """username and password from a JSON body or a form."""
    data = _body_json(request)
    if isinstance(data, dict):
        return str(data.get("username", "")), str(data.get("password", ""))
    return request.POST.get("username", ""), request.POST.get("password", "")


def _user(request):
    """The username a `Authorization: Bearer TOKEN` header names, or None."""
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer "):
        return None
    with _lock:
        return _tokens.get(header[len("Bearer "):].strip())


def _unauthorized():
    return JsonResponse({"error": "a valid bearer token is needed"}, status=401)


@csrf_exempt
def login(request):
    """POST {username, password} (JSON or form): 200 {token, user} or 401."""
    if request.method != "POST":
        return JsonResponse({"error": "POST only"}, status=405)
    username, password = _credentials(request)
    user = authenticate(request, username=username, password=password)
    if user is None:
        return JsonResponse({"error": "invalid username or password"}, status=401)
    token = secrets.token_hex(16)
    with _lock:
        _tokens[token] = user.get_username()
        _api_logins[user.get_username()] = _api_logins.get(user.get_username(), 0) + 1
    response = JsonResponse({"token": token, "user": {"username": user.get_username()}})
    response["X-Token"] = token
    return response


@csrf_exempt
def whoami(request):
    """GET: {username} of the bearer token, or 401."""
    user = _user(request)
    if user is None:
        return _unauthorized()
    return JsonResponse({"username": user})


@csrf_exempt
def items(request):
    """GET: the items, newest last, {items, count}. POST {name, ...}: 201 the new item."""
    global _next_id
    user = _user(request)
    if user is None:
        return _unauthorized()
    if request.method == "GET":
        with _lock:
            listed = list(_items.values())
        return JsonResponse({"items": listed, "count": len(listed)})
    if request.method == "POST":
        data = _body_json(request)
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return JsonResponse({"error": "a JSON object with a string `name` is needed"}, status=400)
        with _lock:
            item = dict(data, id=_next_id, owner=user)
            _items[_next_id] = item
            _next_id += 1
        return JsonResponse(item, status=201)
    return JsonResponse({"error": "GET or POST only"}, status=405)


@csrf_exempt
def item(request, item_id):
    """GET, PUT, PATCH (JSON) or DELETE one item; 404 when there is none."""
    user = _user(request)
    if user is None:
        return _unauthorized()
    with _lock:
        found = _items.get(item_id)
        if found is None:
            return JsonResponse({"error": f"no item {item_id}"}, status=404)
        if request.method == "GET":
            return JsonResponse(found)
        if request.method in ("PUT", "PATCH"):
            data = _body_json(request)
            if not isinstance(data, dict):
                return JsonResponse({"error": "a JSON object is needed"}, status=400)
            if request.method == "PUT":
                found = dict(data, id=item_id, owner=found["owner"])
            else:
                found = dict(found, **data, id=item_id, owner=found["owner"])
            _items[item_id] = found
            return JsonResponse(found)
        if request.method == "DELETE":
            del _items[item_id]
            return HttpResponse(status=204)
    return JsonResponse({"error": "GET, PUT, PATCH or DELETE only"}, status=405)


@csrf_exempt
def echo(request, rest=""):
    """Any method: what arrived, as JSON (httpbin's /anything)."""
    body = request.body[:MAX_BODY].decode("utf-8", "replace")
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        parsed = None
    form = {k: request.POST.getlist(k) for k in request.POST} if request.method == "POST" else {}
    return JsonResponse(
        {
            "method": request.method,
            "path": request.path,
            "query": {k: request.GET.getlist(k) for k in request.GET},
            "headers": {k.lower(): v for k, v in request.headers.items()},
            "body": body,
            "json": parsed,
            "form": form,
            "files": {k: f.name for k, f in request.FILES.items()},
        }
    )
