"""The course's later labs as a learner runs them (see test_course.py): a module of
its own, so that its lab cloud runs beside the first labs' on another worker."""

from __future__ import annotations

import pytest
from labs.test_course import by_shape, learner, run_lab  # noqa: F401

pytestmark = pytest.mark.e2e  # lab clouds on the standard ports, the `novalab` and `openstack` CLIs


@pytest.mark.parametrize("name", by_shape(later=True))
def test_lab_from_start_to_finish(learner, name):  # noqa: F811
    run_lab(learner, name)
