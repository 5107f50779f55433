"""Top-level URLs. The sandbox service is mounted only while SPORTS_SANDBOX is on."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path

from config.login import throttled
from config.views import healthz
from mintroute.urls import operations

urlpatterns: list[URLPattern | URLResolver] = [
    path("healthz", healthz, name="healthz"),
    *operations,  # GET /readyz and GET /metrics (docs/operations.md)
    # Every login form behind one throttle: 10 failures a minute per client IP across both.
    path("accounts/login/", throttled(auth_views.LoginView.as_view()), name="login"),
    path("admin/login/", throttled(admin.site.login)),  # before the admin's own URLs, so it is this one
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("", include("mintroute.urls")),
    path("", include("config.demo.urls")),
]

if settings.SPORTS_SANDBOX:
    urlpatterns.append(path("sdk/v1/", include("sportsproxy.sandbox.urls")))
