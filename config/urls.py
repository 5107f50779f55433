"""Top-level URLs. The sandbox service is mounted only while SPORTS_SANDBOX is on; the site's own apps
(settings.SITE_APPS) are mounted at `/` when they have URLs. The HTML pages here (the login pages, the
admin, the first page) answer 503 while a store they need is down (config/unavailable.py); the route,
/healthz, /readyz and /metrics answer as their own. The admin and the 404 and 500 pages wear the
product's name."""

from __future__ import annotations

from importlib.util import find_spec

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path

from config import project
from config.login import throttled
from config.unavailable import every_page_fails_politely, fails_politely
from config.views import healthz, start_page
from mintroute.urls import operations

admin.site.site_header = project.NAME  # the admin's pages: "<page> | NAME", under a header of NAME
admin.site.site_title = project.NAME
admin.site.index_title = "Administration"
admin_urls, admin_app, admin_namespace = admin.site.urls

handler404 = "config.views.page_not_found"  # both read no store (config/views.py)
handler500 = "config.views.server_error"

urlpatterns: list[URLPattern | URLResolver] = [
    path("healthz", healthz, name="healthz"),
    *operations,  # GET /readyz and GET /metrics (docs/operations.md)
    # Every login form behind one throttle: 10 failures a minute per client IP across both; each
    # login page answers 503 (never a 500) while the database or the cache it needs is unreachable.
    path("accounts/login/", fails_politely(throttled(auth_views.LoginView.as_view())), name="login"),
    path("admin/login/", fails_politely(throttled(admin.site.login))),  # before the admin's own URLs
    path("accounts/logout/", fails_politely(auth_views.LogoutView.as_view()), name="logout"),
    path("admin/", (every_page_fails_politely(admin_urls), admin_app, admin_namespace)),
    path("", include("mintroute.urls")),
]

site_apps = [path("", include(f"{app}.urls")) for app in settings.SITE_APPS if find_spec(f"{app}.urls")]
urlpatterns += site_apps
# The product's starting page: `/`, or `/start/` while an app of the site answers `/`.
urlpatterns.append(path("start/" if site_apps else "", fails_politely(start_page), name="start"))

if settings.SPORTS_SANDBOX:
    urlpatterns.append(path("sdk/v1/", include("sportsproxy.sandbox.urls")))
