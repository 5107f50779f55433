"""The standalone server's routes: the service's, and the control endpoints when a control secret is set."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path

from sportsproxy.sandbox.standalone import control

urlpatterns: list[URLPattern | URLResolver] = [path("sdk/v1/", include("sportsproxy.sandbox.urls"))]

if control.control_secret():
    urlpatterns += [
        path("control/v1/keys", control.create_key),
        path("control/v1/keys/revoke", control.revoke_key),
        path("control/v1/quota", control.set_quota),
        path("control/v1/tokens/expire", control.expire_token),
    ]
