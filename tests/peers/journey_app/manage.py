#!/usr/bin/env python
"""Django's command line for the journey app (JOURNEY_DIR must be set), e.g.
`JOURNEY_DIR=/tmp/j python manage.py seed_accounts 10 --csv /tmp/j/accounts.csv`."""
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "journey.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
