"""A lab's [parameters]: what each attempt draws for its learner, in names and texts."""

from __future__ import annotations

import random

import pytest

from novalab.labs.course import Lab


def _lab(tmp_path, parameters: str, names: str = 'server = "lab42-{user}-vm{tag}"') -> Lab:
    folder = tmp_path / "42-drawn"
    folder.mkdir()
    (folder / "lab.toml").write_text(f'title = "t"\nsteps = [1]\n\n[names]\n{names}\n\n'
                                     f"[parameters]\n{parameters}\n")
    return Lab.load(folder)


def test_each_attempt_draws_within_the_specs(tmp_path):
    lab = _lab(tmp_path, 'size = {choice = [1, 2, 3]}\nport = {range = [20, 30]}\n'
                         "tag = {token = 4}")
    draws = [lab.draw(random.Random(seed)) for seed in range(40)]
    assert {d["size"] for d in draws} == {1, 2, 3}
    assert all(20 <= d["port"] <= 30 for d in draws)
    assert all(len(d["tag"]) == 4 and int(d["tag"], 16) >= 0 for d in draws)
    assert len({d["tag"] for d in draws}) > 30  # not one answer for the whole class


def test_names_and_texts_carry_the_attempts_values(tmp_path):
    lab = _lab(tmp_path, "tag = {token = 4}\nsize = {choice = [1, 2]}")
    values = {"tag": "beef", "size": 2, "workdir": "/x"}
    assert lab.rendered_names("ann", values) == {"server": "lab42-ann-vmbeef"}
    text = "boot {server} with a {size} GB volume; {notmine} stays"
    assert lab.render(text, "ann", values) == \
        "boot lab42-ann-vmbeef with a 2 GB volume; {notmine} stays"
    # the published page: no learner, no attempt
    assert lab.render(text) == "boot lab42-{user}-vm{tag} with a {size} GB volume; {notmine} stays"


@pytest.mark.parametrize("spec", ['x = {choice = [1]}', 'x = {range = [5, 5]}',
                                  'x = {token = 40}', 'x = {choice = [1, 2], token = 4}',
                                  'workdir = {token = 4}', 'x = {}'])
def test_a_parameter_that_cannot_vary_is_refused_when_the_lab_loads(tmp_path, spec):
    with pytest.raises(ValueError, match="needs exactly one of"):
        _lab(tmp_path, spec)
