"""How a check's message names a setting, in the site it runs in.

Any site has Django's settings (`SECRET_KEY`, `SILENCED_SYSTEM_CHECKS`): a message names those. A site
that fills some of them from environment variables may say which in SPORTS_SETTINGS_VARIABLES (this
project does: `DJANGO_SECRET_KEY` fills `SECRET_KEY`), and its messages then name the variable too,
since that is what its operator sets. A site that says nothing is never told of another site's variables.
"""

from __future__ import annotations

from django.conf import settings


def variable_of(setting: str) -> str | None:
    """The environment variable this site fills `setting` from, when its settings say so."""
    variables = getattr(settings, "SPORTS_SETTINGS_VARIABLES", None)
    variable = variables.get(setting) if isinstance(variables, dict) else None
    return variable if isinstance(variable, str) and variable else None


def named(setting: str) -> str:
    """`setting` as a sentence names it: `SECRET_KEY`, or `DJANGO_SECRET_KEY (the SECRET_KEY setting)`."""
    variable = variable_of(setting)
    return f"{variable} (the {setting} setting)" if variable else setting


def silencing(check_id: str) -> str:
    """How this site waives `check_id`: Django's setting, and the variable that fills it when there is one."""
    setting = f'SILENCED_SYSTEM_CHECKS = ["{check_id}"]'
    variable = variable_of("SILENCED_SYSTEM_CHECKS")
    return f"{setting} (here: {variable}={check_id})" if variable else setting
