from __future__ import annotations

from django.urls import path

from sportsproxy.sandbox.rpc import views

app_name = "sandbox"
urlpatterns = [
    path("rpc", views.rpc, name="rpc"),
]
