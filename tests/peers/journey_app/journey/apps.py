from django.apps import AppConfig


class JourneyConfig(AppConfig):
    name = "journey"

    def ready(self):
        from . import signals  # noqa: F401  (connects the login counters)
