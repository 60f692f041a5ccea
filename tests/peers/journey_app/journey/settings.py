"""The one settings module of the journey app (see ../serve.py).

Environment:
  JOURNEY_DIR   a directory the app may write: its SQLite database (required)
"""

import os
import sys
from pathlib import Path

try:
    DATA_DIR = Path(os.environ["JOURNEY_DIR"])
except KeyError:
    sys.exit("journey app: set JOURNEY_DIR to a directory for its SQLite database")

# Test-only: the app listens on loopback for the tests of one process.
SECRET_KEY = "headroom-journey-tests-only-not-a-secret-8f1c2b7a9d3e4f5061728394a5b6c7d8"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "journey",
]

MIDDLEWARE = [
    "journey.recorder.RecorderMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]

ROOT_URLCONF = "journey.urls"
WSGI_APPLICATION = "journey.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
            ],
        },
    }
]

# SQLite in WAL mode, each write transaction taken at once (IMMEDIATE: no deadlock
# when a reader would upgrade), waiting up to 30 s for the lock under load.
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": DATA_DIR / "db.sqlite3",
        "OPTIONS": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        },
    }
}

# Sessions live server-side in the process's memory (one process, many threads), so a
# login writes no session row; MAX_ENTRIES is far above any test's number of sessions
# (the default, 300, would cull live sessions under load).
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "OPTIONS": {"MAX_ENTRIES": 10_000_000, "CULL_FREQUENCY": 10},
    }
}
SESSION_ENGINE = "django.contrib.sessions.backends.cache"

# A fast hasher: seeding a thousand accounts and logging them in costs milliseconds,
# not the seconds PBKDF2 would take. Never do this outside a test.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
AUTH_PASSWORD_VALIDATORS = []

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/home/"

USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Errors (a 500) to stderr; refused requests (403, 404) are expected under test and
# not logged.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr"}},
    "loggers": {
        "django": {"handlers": ["stderr"], "level": "ERROR"},
        "waitress": {"handlers": ["stderr"], "level": "ERROR"},
    },
}
