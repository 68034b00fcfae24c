"""Bounded retries: through a short outage, never past the bound, never on the terminal."""

from __future__ import annotations

import pytest

from novalab.reference.common import retry


class Flaky:
    def __init__(self, failures: int, error: Exception):
        self.failures = failures
        self.error = error
        self.calls = 0

    def __call__(self, value):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return value


def test_a_short_outage_is_waited_out():
    flaky = Flaky(2, ConnectionError("database restarting"))
    assert retry.call(flaky, "saved", bound=10) == "saved"
    assert flaky.calls == 3


def test_a_terminal_error_is_raised_at_once():
    flaky = Flaky(5, KeyError("gone"))
    with pytest.raises(KeyError):
        retry.call(flaky, "x", terminal=(KeyError,), bound=10)
    assert flaky.calls == 1


def test_past_the_bound_the_last_error_is_raised_as_it_was():
    flaky = Flaky(10**6, ConnectionError("still down"))
    with pytest.raises(ConnectionError, match="still down"):
        retry.call(flaky, "x", bound=0.3)
    assert flaky.calls >= 2
