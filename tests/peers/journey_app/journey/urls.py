from django.urls import path

from . import api, views

urlpatterns = [
    path("login/", views.login_view),
    path("home/", views.home),
    path("public/", views.public),
    path("upload/", views.upload),
    path("logout/", views.logout_view),
    path("stats/", views.stats),
    path("stats/reset/", views.stats_reset),
    path("stats/requests/", views.stats_requests),
    path("api/login", api.login),
    path("api/whoami", api.whoami),
    path("api/items", api.items),
    path("api/items/<int:item_id>", api.item),
    path("echo", api.echo),
    path("echo/", api.echo),
    path("echo/<path:rest>", api.echo),
]
