"""`POST /api/sports-token`: a logged-in browser gets a short-lived token for the sports API."""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest
from rest_framework import exceptions
from rest_framework.permissions import BasePermission
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from mintroute import conf
from mintroute.authentication import SessionAuthentication401
from mintroute.body import TokenRequestParser, reason_of
from mintroute.errors import RouteError, route_exception_handler
from mintroute.minting import mint_for, remember_token
from mintroute.ratelimits import enforce_rate_limit

logger = logging.getLogger(__name__)


class SportsTokenPermission(BasePermission):
    """Logged in, and allowed by the SPORTS_TOKEN_PERMISSION hook (which fails closed)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not request.user or not request.user.is_authenticated:
            return False  # DRF answers NotAuthenticated: 401
        try:
            allowed = bool(conf.permission()(request._request))
        except Exception:
            logger.exception("SPORTS_TOKEN_PERMISSION raised; refusing the token")
            allowed = False
        if not allowed:
            raise RouteError(403, "forbidden", "This account is not allowed to get sports tokens.")
        return True


class SportsTokenView(APIView):
    """Checks, in order: method, session, CSRF, permission hook, rate limit, body; then
    answers the session's reusable token or mints one with the server's API key."""

    http_method_names = ["post"]
    authentication_classes = [SessionAuthentication401]
    permission_classes = [SportsTokenPermission]
    renderer_classes = [JSONRenderer]
    parser_classes = [TokenRequestParser]

    def get_exception_handler(self) -> Any:
        return route_exception_handler

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        if request.method is None or request.method.lower() not in self.http_method_names:
            raise exceptions.MethodNotAllowed(str(request.method))  # before auth: 405 for everyone
        super().initial(request, *args, **kwargs)

    def post(self, request: Request) -> Response:
        django_request: HttpRequest = request._request
        enforce_rate_limit(django_request)  # before anything reaches upstream
        reason = reason_of(request.data)
        minting = mint_for(django_request, reason)
        response = Response(minting.body)
        remember_token(response, django_request, minting)
        return response

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Cache-Control"] = "no-store"  # a token must never be served from a cache
        response["Pragma"] = "no-cache"
        return response
