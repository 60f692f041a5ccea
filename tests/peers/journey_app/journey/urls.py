from django.urls import path

from . import views

urlpatterns = [
    path("login/", views.login_view),
    path("home/", views.home),
    path("public/", views.public),
    path("upload/", views.upload),
    path("logout/", views.logout_view),
    path("stats/", views.stats),
    path("stats/reset/", views.stats_reset),
]
