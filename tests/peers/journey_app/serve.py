"""A Django app with a session login behind CSRF protection, served by waitress on
127.0.0.1, for the tests of headroom's application journeys against a real web
framework. Installed into a venv by scripts/peers.sh (peer_journey_django); run as

    JOURNEY_DIR=DIR [JOURNEY_ACCOUNTS=N] [JOURNEY_CSV=FILE] python serve.py PORT

It migrates a fresh SQLite database in DIR, seeds N accounts (default 10) `user0001`..
with the passwords `pw-user0001`.., writes them to FILE as CSV (`username,password`)
when asked, then serves until killed:

  GET  /login/         the form: `username`, `password`, `csrfmiddlewaretoken` (hidden),
                       and the `csrftoken` cookie
  POST /login/         302 to `next` or /home/ with the `sessionid` cookie (and a new
                       `csrftoken`); wrong credentials: 200, the form, `id="error"`;
                       no or a wrong CSRF token: 403
  GET  /home/          login required (else 302 to /login/?next=/home/):
                       `<h1 id="greeting">Hello, NAME</h1>` and an upload form
  GET  /public/        anyone
  POST /upload/        login required, CSRF: the multipart file `doc`; JSON `name`,
                       `size`, `sha256`, `content_type`, `user`
  GET  /logout/        ends the session, 302 to /login/
  GET  /stats/         JSON: `logins` per account, `total_logins`, `failed_logins`,
                       `public_requests`, `accounts`
  POST /stats/reset/   every count back to zero

Environment: JOURNEY_THREADS (waitress threads, default 8), JOURNEY_CONNECTIONS
(waitress's connection limit, default 1000).
"""

import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: JOURNEY_DIR=DIR python serve.py PORT")
    port = int(sys.argv[1])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "journey.settings")

    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    accounts = int(os.environ.get("JOURNEY_ACCOUNTS", "10"))
    csv = os.environ.get("JOURNEY_CSV") or None
    call_command("seed_accounts", accounts, csv=csv, verbosity=0)

    from waitress import serve

    from journey.wsgi import application

    serve(
        application,
        host="127.0.0.1",
        port=port,
        threads=int(os.environ.get("JOURNEY_THREADS", "8")),
        connection_limit=int(os.environ.get("JOURNEY_CONNECTIONS", "1000")),
        # poll(2), not select(2): more than 1024 open connections under load.
        asyncore_use_poll=True,
        ident="journey",
    )


if __name__ == "__main__":
    main()
