"""sportsproxy/django/secrets.py: each rule of a weak secret, said without quoting it."""

from __future__ import annotations

import secrets as random_source

import pytest

from sportsproxy.django.secrets import is_repeated, overlap, weakness

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
    for _ in range(100):
        assert weakness(random_source.token_hex(32), min_length=50) is None


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
