"""The name filter agrees with ``re.search`` on every pattern it accepts."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from novalab.reference.nova.api.name_filter import UnsupportedPattern, compile_filter

PIECES = st.sampled_from(["a", "b", "-", ".", ".*", "\\.", "\\-", "ab"])


@settings(max_examples=500, deadline=None)
@given(start=st.booleans(), pieces=st.lists(PIECES, max_size=6), end=st.booleans(),
       name=st.text(alphabet="ab-.", max_size=12))
def test_agrees_with_re_search(start, pieces, end, name):
    pattern = ("^" if start else "") + "".join(pieces) + ("$" if end else "")
    assert compile_filter(pattern)(name) == bool(re.search(pattern, name)), pattern


@pytest.mark.parametrize("pattern", ["(a)", "a|b", "a+", "a?", "[ab]", "a{2}", "\\d",
                                     "a^", "$a", "\\"])
def test_the_rest_of_the_syntax_is_refused(pattern):
    with pytest.raises(UnsupportedPattern):
        compile_filter(pattern)
