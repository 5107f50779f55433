"""Hypothesis strategies: any JSON value, envelopes with every field of every type, raw bytes."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=15,
)
PARAM_NAMES = ["ttl", "limit", "sports", "cursor", "apiKey", "token", "subscriptionId", "reason"]
METHODS = ["auth", "tokens.create", "matches.list", "matches.subscribe", "matches.unsubscribe", "auth.expired"]

params = st.dictionaries(st.sampled_from(PARAM_NAMES) | st.text(max_size=8), json_values, max_size=4) | json_values


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    """Envelopes where each member is absent, right, or any JSON value."""
    envelope: dict[str, Any] = {}
    for name, right in (
        ("jsonrpc", st.just("2.0")),
        ("id", st.text(max_size=20)),
        ("method", st.sampled_from(METHODS) | st.text(max_size=20)),
        ("params", params),
    ):
        choice = draw(st.sampled_from(["right", "right", "any", "absent"]))
        if choice != "absent":
            envelope[name] = draw(right if choice == "right" else json_values)
    return envelope


def deep_nesting(depth: int) -> str:
    return "[" * depth + "]" * depth
