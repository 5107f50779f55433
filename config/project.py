"""This project's name and the choices it was made with: the defaults the settings and the pages read.

`copier update` writes this file again from the recorded answers (`.copier-answers.yml`): to change an
answer, run `copier update --defaults --data NAME=VALUE` rather than editing either file.
"""

from __future__ import annotations

from typing import Final, Literal

NAME: Final = "Sports token starter"
# "embedded": the site mounts the sandbox while SPORTS_BASE_URL is unset; "tests": only the tests do.
SANDBOX: Final[Literal["embedded", "tests"]] = "embedded"
# The default of SPORTS_TOKEN_SHARING: "login" (each login its own token) or "site" (one token for all).
TOKEN_SHARING: Final[Literal["login", "site"]] = "login"  # noqa: S105 - a mode, not a secret
