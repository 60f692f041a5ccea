"""The journey app's pages. Every form is protected by Django's CsrfViewMiddleware: a
POST without the `csrftoken` cookie and a matching `csrfmiddlewaretoken` field (or
`X-CSRFToken` header) is answered 403, except the two test-only /stats/ endpoints."""

import hashlib
import threading

from django.contrib.auth import authenticate, get_user_model, login, logout
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from . import api, recorder
from .models import Counter, LoginTally

# Requests to /public/, counted in memory: the app is one process (waitress's threads),
# and the anonymous page should cost no database write.
_public_lock = threading.Lock()
_public_requests = 0


def _next_url(request):
    """Where a successful login goes: `next` when it is a path on this host, else /home/."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return "/home/"


@require_http_methods(["GET", "POST"])
def login_view(request):
    """GET: the form (and the `csrftoken` cookie). POST: `username`, `password`: 302 to
    `next` or /home/ when they are right, else 200 with the form and an error."""
    error = None
    username = ""
    if request.method == "POST":
        username = request.POST.get("username", "")
        user = authenticate(request, username=username, password=request.POST.get("password", ""))
        if user is not None:
            login(request, user)
            return HttpResponseRedirect(_next_url(request))
        error = "Invalid username or password."
    context = {"error": error, "username": username, "next": request.GET.get("next", "")}
    return render(request, "journey/login.html", context)


@require_GET
@login_required
def home(request):
    """The greeting of the logged-in user, with the upload form (a fresh CSRF token)."""
    return render(request, "journey/home.html")


@require_GET
def public(request):
    """A page anyone may read."""
    global _public_requests
    with _public_lock:
        _public_requests += 1
    return render(request, "journey/public.html")


@require_POST
@login_required
def upload(request):
    """A multipart file in the field `doc`: its name, size and SHA-256 as JSON."""
    doc = request.FILES.get("doc")
    if doc is None:
        return JsonResponse({"error": "no file in the field `doc`"}, status=400)
    digest = hashlib.sha256()
    size = 0
    for chunk in doc.chunks():
        digest.update(chunk)
        size += len(chunk)
    return JsonResponse(
        {
            "name": doc.name,
            "size": size,
            "sha256": digest.hexdigest(),
            "content_type": doc.content_type,
            "user": request.user.get_username(),
        }
    )


@require_http_methods(["GET", "POST"])
def logout_view(request):
    """Ends the session; 302 to /login/."""
    logout(request)
    return HttpResponseRedirect("/login/")


@csrf_exempt
@require_GET
def stats(request):
    """Test-only: successful logins per account, failed logins, requests to /public/."""
    rows = get_user_model().objects.order_by("username").values_list("username", "logintally__logins")
    logins = {name: count or 0 for name, count in rows}
    failed = Counter.objects.filter(name="failed_logins").values_list("value", flat=True).first()
    with _public_lock:
        public_requests = _public_requests
    return JsonResponse(
        {
            "accounts": len(logins),
            "logins": logins,
            "total_logins": sum(logins.values()),
            "failed_logins": failed or 0,
            "public_requests": public_requests,
            "api_logins": api.api_logins(),
        }
    )


@csrf_exempt
@require_POST
def stats_reset(request):
    """Test-only: every count of /stats/ back to zero."""
    global _public_requests
    LoginTally.objects.update(logins=0)
    Counter.objects.update(value=0)
    with _public_lock:
        _public_requests = 0
    api.reset()
    recorder.reset()
    return JsonResponse({"reset": True})


@csrf_exempt
@require_GET
def stats_requests(request):
    """Test-only: what reached the app (but /stats/): counts per `METHOD /path` and the
    requests themselves (method, path, query, headers, body's first bytes), in order."""
    return JsonResponse(recorder.snapshot())
