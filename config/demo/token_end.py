"""The demo's early end of a browser's token: its "Expire my token now" button, and every logout.

A logout ends the login's token in the same request, before the session goes: ended from the page
before logging out, it would leave a window in which the socket, told of the early end, mints a new
token on the session about to end, and the page keeps working after "Log out".
Outside the demo a logout ends nothing: the service has no way to end a token early, so it lives out
its short life.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.signals import user_logged_out
from django.dispatch import receiver
from django.http import HttpRequest

from config.demo.mode import is_demo
from config.unavailable import STORE_ERRORS
from mintroute import login_of, remembered_token

logger = logging.getLogger(__name__)


def end_the_logins_token(request: HttpRequest) -> bool:
    """End the token the mint route gave this login (False if it had none, or it was no longer valid)."""
    from sportsproxy.sandbox.accounts.tokens import expire_early  # the sandbox's own aid: the demo mounts it

    stored = remembered_token(request, login_of(request))
    return expire_early(stored["token"]) if stored else False


@receiver(user_logged_out)
def end_the_token_on_logout(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    if request is None or not is_demo():
        return
    try:
        end_the_logins_token(request)
    except STORE_ERRORS:  # the logout itself goes on: the session still ends
        logger.warning("The demo could not end the token on logout (a store is unreachable): it lives out its life.")
