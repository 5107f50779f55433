"""Is this secret weak? One answer for every secret a site configures (the site's SECRET_KEY,
the sandbox's signing key): each rule written once, here, where the mint route's and the
sandbox's deploy checks can both import it (both may import the glue; the SDK core needs none).

Each function answers with the sentence a check prints (never quoting the secret), or None.
"""

from __future__ import annotations

MIN_DISTINCT_CHARACTERS = 10


def weakness(secret: str, *, min_length: int) -> str | None:
    """Why `secret` is guessable, or None: too short, too few distinct characters, white space at
    either end, or one shorter string repeated (`abcde` x 10)."""
    if secret != secret.strip():
        return "has white space at its start or end (a copy-paste slip, and characters an attacker need not guess)"
    if len(secret) < min_length:
        return f"is shorter than {min_length} characters"
    if len(set(secret)) < MIN_DISTINCT_CHARACTERS:
        return f"has fewer than {MIN_DISTINCT_CHARACTERS} distinct characters"
    if is_repeated(secret):
        return "is one shorter string repeated"
    return None


def is_repeated(secret: str) -> bool:
    """`secret` is some shorter string written two or more times (`0123456789` x 5)."""
    return len(secret) > 1 and secret in (secret + secret)[1:-1]


def overlap(secret: str, other: str) -> bool:
    """`secret` equals, contains or is contained in `other`, white space ignored."""
    first, second = "".join(secret.split()), "".join(other.split())
    return bool(first and second) and (first in second or second in first)
