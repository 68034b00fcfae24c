"""The classic table's notes say where novalab's chain is not one release's."""

from __future__ import annotations

from novalab.diagrams.flows import get_flow


def test_step_12_says_it_is_the_tables_hybrid():
    """Grizzly's scheduler cast run_instance; build_and_run_instance is the conductor's
    (Juno on): the step that shows it cast by the scheduler must say so."""
    (note,) = get_flow("classic").step(12).notes
    assert "hybrid" in note and "run_instance" in note.replace("build_and_run_instance", "")
    assert "Juno" in note and "conductor" in note
