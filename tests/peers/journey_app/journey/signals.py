"""Counts logins through django.contrib.auth's own signals: `user_logged_in` (sent by
`login()`) and `user_login_failed` (sent by `authenticate()` when no backend accepts
the credentials)."""

from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.db.models import F
from django.dispatch import receiver

from .models import Counter, LoginTally


def bump_counter(name):
    """Adds one to the counter `name`, making it when missing."""
    if not Counter.objects.filter(name=name).update(value=F("value") + 1):
        _, created = Counter.objects.get_or_create(name=name, defaults={"value": 1})
        if not created:
            Counter.objects.filter(name=name).update(value=F("value") + 1)


@receiver(user_logged_in)
def count_login(sender, user, **kwargs):
    if not LoginTally.objects.filter(user_id=user.pk).update(logins=F("logins") + 1):
        _, created = LoginTally.objects.get_or_create(user_id=user.pk, defaults={"logins": 1})
        if not created:
            LoginTally.objects.filter(user_id=user.pk).update(logins=F("logins") + 1)


@receiver(user_login_failed)
def count_failed_login(sender, credentials, **kwargs):
    bump_counter("failed_logins")
