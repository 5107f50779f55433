"""The package's public names: `__all__` is complete (what importing it loads: tests/standalone)."""

from __future__ import annotations

import sportsproxy
from sportsproxy import errors


def test_all_lists_every_public_name() -> None:
    public = {name for name in dir(sportsproxy) if not name.startswith("_") and name[0].isupper()}
    assert set(sportsproxy.__all__) == public


def test_every_error_class_is_exported() -> None:
    classes = {name for name, value in vars(errors).items() if isinstance(value, type) and issubclass(value, Exception)}
    assert classes <= set(sportsproxy.__all__)
