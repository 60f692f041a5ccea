"""The journey app: a session login with CSRF protection, for headroom's tests (see
../serve.py)."""
