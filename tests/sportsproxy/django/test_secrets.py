"""sportsproxy/django/secrets.py: each rule of a weak secret, said without quoting it."""

from __future__ import annotations

import secrets as random_source
import string
import time
from collections.abc import Callable

import pytest
from django.core.management.utils import get_random_secret_key

from sportsproxy.django.secrets import MIN_ESTIMATED_BITS, estimated_bits, is_repeated, overlap, weakness

WEAK = {
    "shorter than the minimum": ("a1b2c3d4e5f6g7h8i9j0" * 2)[:49],
    "fewer than 10 distinct characters": "abcdefghi" * 6,
    "white space at the start": " " * 45 + "abcde",
    "white space at the end": random_source.token_hex(32) + "\n",
    "abcde x 10": "abcde" * 10,
    "0123456789 x 5": "0123456789" * 5,
    "password x 7": "password" * 7,
    "a 27-character string twice": "abcdefghijklmnopqrstuvwxyz0" * 2,
}


@pytest.mark.parametrize("case", WEAK)
def test_a_weak_secret_is_named_by_its_rule(case: str) -> None:
    reason = weakness(WEAK[case], min_length=50)
    assert reason is not None
    assert WEAK[case].strip() not in reason


def test_64_random_hexadecimal_characters_pass() -> None:
    for _ in range(10):  # many more draws of each random source below
        assert weakness(random_source.token_hex(32), min_length=50) is None


# The service's rules' guessable secrets: each passes the plain rules (length, distinct characters, no
# repetition) and is refused by the estimate alone.
GUESSABLE = {
    "0123456789 x 5 + 0": "0123456789" * 5 + "0",
    "a x 40 + 0123456789": "a" * 40 + "0123456789",
    "the alphabet twice less its last letter": string.ascii_lowercase + string.ascii_lowercase[:-1],
    "a phrase": "this-is-my-very-secret-production-key-please-change",
    "a x 22 + 0123456789 (a signing key)": "a" * 22 + "0123456789",
}


@pytest.mark.parametrize("case", GUESSABLE)
def test_a_guessable_secret_is_refused_by_its_estimated_entropy(case: str) -> None:
    secret = GUESSABLE[case]
    reason = weakness(secret, min_length=32)
    assert reason is not None
    assert reason.startswith("is guessable: about ")
    assert f"fewer than {MIN_ESTIMATED_BITS}" in reason
    assert secret not in reason


RANDOM_SOURCES: dict[str, Callable[[], str]] = {
    "secrets.token_hex(32)": lambda: random_source.token_hex(32),
    "secrets.token_urlsafe(48)": lambda: random_source.token_urlsafe(48),
    "get_random_secret_key()": get_random_secret_key,
}
DRAWS = {"secrets.token_hex(32)": 50, "secrets.token_urlsafe(48)": 50, "get_random_secret_key()": 100}


@pytest.mark.parametrize("source", RANDOM_SOURCES)
def test_values_from_a_random_source_pass_every_draw(source: str) -> None:
    """200 draws in all; the lowest estimate seen is far above the threshold (about 150 bits)."""
    refused = [weakness(RANDOM_SOURCES[source](), min_length=50) for _ in range(DRAWS[source])]
    assert [reason for reason in refused if reason] == []


def test_a_long_secret_is_estimated_by_its_first_characters_only() -> None:
    """zxcvbn refuses values over 72 characters and slows with the length; the estimate weighs the
    first 50, which can only lower it."""
    key = random_source.token_hex(32)
    assert estimated_bits(key * 4) == estimated_bits(key)
    assert weakness("a" * 64 + random_source.token_hex(32), min_length=50) is not None
    started = time.perf_counter()
    estimated_bits(random_source.token_urlsafe(300))
    assert time.perf_counter() - started < 5  # bounded: a generous margin over the ~0.2 s it takes


def test_repetition_is_a_whole_shorter_string_written_again() -> None:
    assert is_repeated("abab")
    assert is_repeated("password" * 7)
    assert not is_repeated("abcabcab")  # a prefix repeated, then cut: not whole copies
    assert not is_repeated("a")


def test_overlap_is_equal_contains_or_contained_white_space_ignored() -> None:
    key = random_source.token_hex(32)
    assert overlap(key, key)
    assert overlap(key[:40], key)
    assert overlap(f"{key}-more", key)
    assert overlap(f" {key[:20]} {key[20:]}\t", key)
    assert not overlap(random_source.token_hex(32), key)
    assert not overlap("", key)


def test_overlap_reads_the_other_secret_backwards_and_in_any_letter_case() -> None:
    key = get_random_secret_key()
    assert overlap(key[::-1], key)
    assert overlap(key.swapcase(), key)
    assert overlap(key.upper()[::-1], key)
    assert overlap(key[5:40].swapcase()[::-1], key)
