from __future__ import annotations

from django.urls import path

from config.demo import views

app_name = "demo"
urlpatterns = [
    path("", views.page, name="page"),
    path("demo/server-matches", views.server_matches, name="server-matches"),
    path("demo/expire-token", views.expire_token, name="expire-token"),
]
