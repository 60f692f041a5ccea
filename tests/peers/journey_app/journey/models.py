"""What /stats/ counts, kept in the database so every thread's count lands (each
count is one `UPDATE ... SET n = n + 1`, an F() expression)."""

from django.conf import settings
from django.db import models


class LoginTally(models.Model):
    """Successful logins of one account (one row per account, made by the seeding)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True
    )
    logins = models.PositiveIntegerField(default=0)


class Counter(models.Model):
    """A named count: `failed_logins`."""

    name = models.CharField(max_length=40, primary_key=True)
    value = models.PositiveBigIntegerField(default=0)
