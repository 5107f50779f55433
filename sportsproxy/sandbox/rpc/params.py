"""Validation of method params. Every failure is `invalid_params` naming the field and bound."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from sportsproxy.sandbox.errors import invalid_params


def only_keys(params: Mapping[str, Any], allowed: Collection[str]) -> None:
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        expected = ", ".join(sorted(allowed)) or "none"
        raise invalid_params(f"Unknown param {unknown[0]!r}; expected only: {expected}.")


def bounded_int(params: Mapping[str, Any], name: str, *, low: int, high: int, default: int) -> int:
    """An integer param within low..high inclusive (bools, floats and strings refused)."""
    if name not in params:
        return default
    value = params[name]
    if type(value) is not int or not low <= value <= high:
        raise invalid_params(f"{name} must be an integer from {low} to {high} inclusive; got {_show(value)}.")
    return value


def optional_string(params: Mapping[str, Any], name: str) -> str | None:
    if name not in params:
        return None
    value = params[name]
    if not isinstance(value, str) or not value:
        raise invalid_params(f"{name} must be a non-empty string; got {_show(value)}.")
    return value


def string_choices(params: Mapping[str, Any], name: str, choices: Collection[str]) -> list[str] | None:
    """An optional array of strings, each one of `choices`."""
    if name not in params:
        return None
    values = params[name]
    allowed = ", ".join(choices)
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise invalid_params(f"{name} must be an array of strings from: {allowed}; got {_show(values)}.")
    for value in values:
        if value not in choices:
            raise invalid_params(f"Unknown value {value!r} in {name}; expected any of: {allowed}.")
    return list(values)


def _show(value: Any) -> str:
    shown = repr(value) if isinstance(value, (str, int, float, bool)) or value is None else type(value).__name__
    return shown if len(shown) <= 40 else shown[:37] + "..."
