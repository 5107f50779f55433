from __future__ import annotations

from django.urls import path

from sportsproxy import views

app_name = "sportsproxy"
urlpatterns = [
    path("demo/server-matches", views.matches_fragment, name="matches-fragment"),
]
