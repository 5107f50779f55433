"""Top-level URLs. The sandbox service is mounted only while SPORTS_SANDBOX is on."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path

from config.views import healthz

urlpatterns: list[URLPattern | URLResolver] = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
]

if settings.SPORTS_SANDBOX:
    urlpatterns.append(path("sdk/v1/", include("sportsproxy.sandbox.urls")))
