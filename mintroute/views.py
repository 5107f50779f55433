"""`POST /api/sports-token`: two thin entries over one set of rules.

Under WSGI Django calls `sports_token`, a plain view. Under ASGI it calls `sports_token_async`:
the same rules (`admission.admit`, in one hop to Django's sync thread), then the wait for the
service on the event loop with the SDK's async client, so no thread is held while it answers.
`mintroute.urls` picks the entry per request.

In "site" mode (SPORTS_TOKEN_SHARING) the mint is the site's single flight (mintroute.sharing); in
both modes a mint that fails on the service's side may ride through (mintroute.ridethrough).
Each answer is counted once, by its outcome and with its time, where the entry decides it (mintroute.metrics).
"""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_not_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from mintroute.admission import Admission, admit
from mintroute.errors import RouteError, no_store
from mintroute.metrics import count
from mintroute.middleware import route_view
from mintroute.minting import amint_upstream, mint_upstream
from mintroute.reuse import remember
from mintroute.ridethrough import ride_through
from mintroute.sharing import asite_token, site_token

logger = logging.getLogger(__name__)


# CSRF is the route's to enforce (admission): an app authenticated by a token header carries no
# CSRF token, and a refusal must be the route's JSON, not Django's HTML page. The route answers its
# own 401, so a site's LoginRequiredMiddleware must not redirect (or load the session) before it.
@route_view  # its answers are the route's own (mintroute.middleware.route_answers_json)
@csrf_exempt
@login_not_required
@transaction.non_atomic_requests  # no transaction to open (a database outage must be the route's 503)
def sports_token(request: HttpRequest) -> HttpResponse:
    """The reusable token of this login, or a newly minted one."""
    try:
        admission = admit(request)
        if admission.reusable is not None:
            count(handed_out(admission), request)
            return token_answer(admission.reusable)
        own = OwnMint()
        try:
            minted = _mint(admission, own)
        except RouteError as refusal:
            held = ride_through(refusal, request, admission)
            count("ridden_through", request)
            return token_answer(held)
    except RouteError as refusal:
        count(refusal.error_code, request)
        return refusal.as_response()
    count(own.outcome, request)
    return token_answer(minted, admission)


@route_view
@csrf_exempt
@login_not_required
@transaction.non_atomic_requests  # the route writes nothing itself; ATOMIC_REQUESTS refuses async views
async def sports_token_async(request: HttpRequest) -> HttpResponse:
    """sports_token for ASGI servers."""
    try:
        admission = await sync_to_async(admit)(request)
        if admission.reusable is not None:
            count(handed_out(admission), request)
            return token_answer(admission.reusable)
        own = OwnMint()
        try:
            minted = await _amint(admission, own)
        except RouteError as refusal:
            held = await sync_to_async(ride_through)(refusal, request, admission)
            count("ridden_through", request)
            return token_answer(held)
    except RouteError as refusal:
        count(refusal.error_code, request)
        return refusal.as_response()
    count(own.outcome, request)
    return token_answer(minted, admission)


class OwnMint:
    """Whether this caller's own mint made its answer: "minted"; else, in "site" mode, the flight
    handed it the site's token that another caller minted: "shared"."""

    outcome = "shared"

    def done(self, body: dict[str, str]) -> dict[str, str]:
        self.outcome = "minted"
        return body


def handed_out(admission: Admission) -> str:
    """The outcome of an answer that needed no mint: the site's token, or this login's again."""
    return "shared" if admission.shared else "reused"


def _mint(admission: Admission, own: OwnMint) -> dict[str, str]:
    """A new token: this caller's ("login" mode), or the site's through its single flight."""
    if admission.shared:
        return site_token(admission.ttl, admission.reason, lambda: own.done(mint_upstream(admission.ttl).as_json()))
    return own.done(mint_upstream(admission.ttl).as_json())


async def _amint(admission: Admission, own: OwnMint) -> dict[str, str]:
    """_mint's async twin."""

    async def mint() -> dict[str, str]:
        return own.done((await amint_upstream(admission.ttl)).as_json())

    if admission.shared:
        return await asite_token(admission.ttl, admission.reason, mint)
    return await mint()


def token_answer(body: dict[str, str], minted_for: Admission | None = None) -> HttpResponse:
    """`{token, expiresAt}`; a newly minted token is remembered for `minted_for`'s login ("login" mode;
    in "site" mode the cache holds the site's token).

    Nothing after the mint may cost the token: if remembering it fails, it is answered anyway.
    """
    response = JsonResponse(body)
    if minted_for is not None and not minted_for.shared:
        try:
            remember(response, body, minted_for.ttl, minted_for.login)
        except Exception:
            logger.exception("The minted token could not be remembered for reuse; answering it anyway")
    return no_store(response)
