"""Is this secret weak? One answer for every secret a site configures (the site's SECRET_KEY,
the sandbox's signing key): each rule written once, here, where the mint route's and the
sandbox's deploy checks can both import it (both may import the glue; the SDK core needs none).

Each function answers with the sentence a check prints (never quoting the secret), or None.

Besides the plain rules, a secret must be hard to guess by an estimate of its entropy: zxcvbn's (Dropbox's
estimator, the `zxcvbn` package, a base dependency), which knows what people type when asked for a secret:
English words and names, common passwords, keyboard walks, sequences (`0123456789`, the alphabet), repeats,
dates, l33t spellings, and any mix of them. A value from a random source scores about 3.3 bits a character
there (`secrets.token_hex(32)`: over 190); a phrase of words or a run of a few characters stays far below.
"""

from __future__ import annotations

import math

MIN_DISTINCT_CHARACTERS = 10
# A key strong enough to sign with: 128 bits, counted as zxcvbn counts (it credits random characters with
# 3.3 bits each, whatever their alphabet, so a random key needs about 40 characters to reach it).
MIN_ESTIMATED_BITS = 128
# zxcvbn's time grows with the square of the length and with the l33t spellings a value allows, and it
# refuses more than 72 characters: the estimate weighs the first 50 (the SECRET_KEY's least length; a random
# 50 scores over 150 bits), which can only lower it: a longer secret is never accepted for what lies beyond.
ESTIMATED_CHARACTERS = 50


def weakness(secret: str, *, min_length: int) -> str | None:
    """Why `secret` is guessable, or None: too short, too few distinct characters, white space at
    either end, one shorter string repeated (`abcde` x 10), or fewer than MIN_ESTIMATED_BITS by zxcvbn."""
    if secret != secret.strip():
        return "has white space at its start or end (a copy-paste slip, and characters an attacker need not guess)"
    if len(secret) < min_length:
        return f"is shorter than {min_length} characters"
    if len(set(secret)) < MIN_DISTINCT_CHARACTERS:
        return f"has fewer than {MIN_DISTINCT_CHARACTERS} distinct characters"
    if is_repeated(secret):
        return "is one shorter string repeated"
    bits = estimated_bits(secret)
    if bits < MIN_ESTIMATED_BITS:
        return (
            f"is guessable: about {bits:.0f} bits by zxcvbn's estimate, fewer than {MIN_ESTIMATED_BITS} (words, "
            "sequences, repeats or keyboard runs rather than characters from a random source)"
        )
    return None


def estimated_bits(secret: str) -> float:
    """log2 of the guesses zxcvbn estimates an attacker needs for `secret` (its first ESTIMATED_CHARACTERS)."""
    from zxcvbn import zxcvbn  # here: its word lists load in a tenth of a second, and only checks need them

    guesses_log10: float = zxcvbn(secret[:ESTIMATED_CHARACTERS])["guesses_log10"]
    return guesses_log10 / math.log10(2)


def is_repeated(secret: str) -> bool:
    """`secret` is some shorter string written two or more times (`0123456789` x 5)."""
    return len(secret) > 1 and secret in (secret + secret)[1:-1]


def overlap(secret: str, other: str) -> bool:
    """`secret` equals, contains or is contained in `other`, read forwards or backwards, in any letter
    case, white space ignored: knowing one is knowing the other."""
    first, second = ("".join(text.split()).casefold() for text in (secret, other))
    return bool(first and second) and any(first in text or text in first for text in (second, second[::-1]))
