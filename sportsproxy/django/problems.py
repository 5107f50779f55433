"""A wrong setting, said once: `Problem` is what `manage.py check` reports, and `SettingsError`
is what run time raises with the same sentence, so a site that skipped `check` gets a clear answer.

Both the SDK's glue and the mint route list their problems this way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.core.checks import CheckMessage, Error, Warning
from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class Problem:
    id: str
    setting: str
    message: str
    hint: str
    warning_only: bool = False  # reported as a warning by `check`, still fatal at run time

    def as_check_message(self) -> CheckMessage:
        kind = Warning if self.warning_only else Error
        return kind(self.message, hint=self.hint, id=self.id)


class SettingsError(ImproperlyConfigured):
    """A setting keeps the SDK or the route from working; `problem.setting` names the culprit."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(f"{problem.message} {problem.hint}")
        self.problem = problem


def problems_of(readers: Iterable[Callable[[], object]]) -> list[Problem]:
    """What `readers` (one per setting, each raising SettingsError) find wrong, in their order, each
    problem once (a reader may raise another's problem: the glue's base URL raises the transport's)."""
    found: list[Problem] = []
    for read in readers:
        try:
            read()
        except SettingsError as error:
            if error.problem not in found:
                found.append(error.problem)
    return found
