"""The test accounts: `user0001` .. `userNNNN` (four digits, more when N needs them),
each with the password `pw-` + its name, and the CSV file that lists them."""

import csv

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import transaction

from .models import Counter, LoginTally


def usernames(n):
    width = max(4, len(str(n)))
    return [f"user{i:0{width}d}" for i in range(1, n + 1)]


def password(username):
    return f"pw-{username}"


@transaction.atomic
def seed(n):
    """Makes the first `n` accounts that are missing, each with its login tally, and the
    counters. Returns the usernames."""
    User = get_user_model()
    names = usernames(n)
    existing = set(User.objects.filter(username__in=names).values_list("username", flat=True))
    User.objects.bulk_create(
        [User(username=u, password=make_password(password(u))) for u in names if u not in existing],
        batch_size=500,
    )
    tallied = set(LoginTally.objects.values_list("user_id", flat=True))
    ids = User.objects.filter(username__in=names).values_list("pk", flat=True)
    LoginTally.objects.bulk_create(
        [LoginTally(user_id=pk) for pk in ids if pk not in tallied], batch_size=500
    )
    Counter.objects.get_or_create(name="failed_logins")
    return names


def write_csv(path, names):
    """The accounts as CSV: a header `username,password`, then one row each."""
    with open(path, "w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["username", "password"])
        for name in names:
            writer.writerow([name, password(name)])
