"""Every upstream link novalab writes points at a file and a function that exist there.

A span's ``novalab.upstream.url`` and ``code.function.name`` send a learner to
upstream's code; upstream moves it (``filter_scheduler.py`` left master in Xena).
``tracing/upstream_index.json`` pins what each linked file holds at each ref
(``scripts/upstream_index.py`` rebuilds it from upstream's git history), so these
checks need no network: one over the source, which covers code a boot never runs,
and one over a boot's trace, which covers what the source builds at run time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from novalab.reference.deploy.boot import BootRequest, boot
from novalab.tracing import attributes as attr
from novalab.tracing import upstream_index
from novalab.tracing.upstream_index import Link, problem, source_links, span_link

ROOT = Path(__file__).resolve().parents[2]
INDEX = upstream_index.load()

# Every repository a boot's trace links into: none may go unchecked.
BOOT_REPOS = {"openstack/nova", "openstack/neutron", "openstack/cinder", "openstack/glance",
              "openstack/keystone", "ceph/ceph", "canonical/cloud-init"}


def test_a_link_to_code_upstream_moved_is_a_problem():
    """The check can fail: the names main linked to before upstream moved them."""
    moved = Link("openstack/nova", "master", "nova/compute/api.py",
                 "API._check_num_instances_quota", "here")
    assert problem(moved, INDEX) == ("here: openstack/nova@master:nova/compute/api.py has no "
                                     "API._check_num_instances_quota")
    gone = Link("openstack/nova", "master", "nova/image/download/__init__.py", None, "here")
    assert "does not exist" in problem(gone, INDEX)
    unknown_ref = Link("openstack/nova", "folsom-eol", "nova/compute/api.py", "API.create", "x")
    assert "ref folsom-eol" in problem(unknown_ref, INDEX)
    there = Link("openstack/nova", "newton-eol", "nova/scheduler/host_manager.py",
                 "HostManager.get_all_host_states", "here")
    assert problem(there, INDEX) is None


def test_span_attributes_make_a_link():
    nova = {attr.UPSTREAM_URL: "https://opendev.org/openstack/nova/src/tag/grizzly-eol/"
                               "nova/conductor/manager.py",
            attr.CODE_FILE_PATH: "nova/conductor/manager.py",
            attr.CODE_FUNCTION_NAME: "nova.conductor.manager.ConductorManager.instance_update"}
    assert span_link(nova, INDEX, "s") == Link(
        "openstack/nova", "grizzly-eol", "nova/conductor/manager.py",
        "ConductorManager.instance_update", "s")
    ceph = {attr.UPSTREAM_URL: "https://github.com/ceph/ceph/blob/main/src/rgw/rgw_op.cc",
            attr.CODE_FUNCTION_NAME: "RGWGetObj::execute"}
    assert span_link(ceph, INDEX, "s").qualname == "RGWGetObj::execute"
    elsewhere = dict(nova, **{attr.CODE_FILE_PATH: "nova/conductor/api.py"})
    assert "is not the linked" in span_link(elsewhere, INDEX, "s")


def test_a_placement_ref_is_a_second_link_the_source_makes(tmp_path):
    """A seam linked per topology is checked at both releases."""
    module = tmp_path / "reference" / "nova" / "x.py"
    module.parent.mkdir(parents=True)
    module.write_text('@upstream("nova/scheduler/manager.py", '
                      '"SchedulerManager.select_destinations", ref="newton-eol", '
                      'placement_ref="pike-eol")\ndef f(self): pass\n')
    links, unresolved = source_links(tmp_path)
    assert unresolved == []
    assert sorted(link.ref for link in links) == ["newton-eol", "pike-eol"]


def test_every_link_in_the_source_exists_upstream():
    links, unresolved = source_links(ROOT)
    assert unresolved == []
    assert {link.repo for link in links} >= BOOT_REPOS
    problems = [p for link in links if (p := problem(link, INDEX))]
    assert problems == [], "\n".join(problems + ["fix the link, or rebuild the pinned list "
                                                 "with scripts/upstream_index.py"])


@pytest.fixture(scope="module", params=["classic", "modern"])
def booted(request, tmp_path_factory):
    """``(topology, spans)`` of one boot on an embedded cloud wired that way."""
    from conftest import make_cloud

    with make_cloud(tmp_path_factory.mktemp(request.param),
                    topology=request.param) as cloud:
        result = boot(cloud, BootRequest(name="upstream-links"))
    cloud.telemetry.shutdown()
    assert result.active, result.server
    return request.param, result.spans


def test_every_link_in_a_boot_trace_exists_upstream(booted):
    _topology, spans = booted
    links, problems = [], []
    for span in spans:
        if attr.UPSTREAM_URL in span.attributes:
            found = span_link(dict(span.attributes), INDEX, span.name)
            (links if isinstance(found, Link) else problems).append(found)
    assert {link.repo for link in links} >= BOOT_REPOS
    problems += [p for link in links if (p := problem(link, INDEX))]
    assert problems == [], "\n".join(sorted(set(problems)))
    # Upstream never reads an image through the RADOS gateway: the span says so and
    # links to the closest upstream function instead of pretending.
    download = next(s for s in spans if s.name == "rgw_download")
    assert download.attributes[attr.CODE_FUNCTION_NAME] == \
        "nova.image.glance.GlanceImageServiceV2.rbd_download"
    assert "upstream Nova never does" in download.attributes[attr.NOVALAB_STAND_IN]


# Nova scheduled with placement from Pike on (allocation candidates, the scheduler's
# claims); Newton's scheduler read every host and claimed nothing.
PRE_PLACEMENT = {"newton-eol", "mitaka-eol", "liberty-eol", "kilo-eol", "juno-eol"}
SCHEDULING = ("SchedulerAPI.select_destinations", "SchedulerManager.select_destinations",
              "FilterScheduler.select_destinations", "FilterScheduler._schedule",
              "HostManager.get_all_host_states", "ComputeTaskManager._schedule_instances")


def test_scheduling_spans_link_the_release_whose_code_does_what_they_do(booted):
    """The classic chain's scheduler links Newton's (it reads every host, claims nothing);
    the modern chain's, which asks placement and claims there, links Pike's."""
    topology, spans = booted
    refs = {}
    for span in spans:
        if span.name in SCHEDULING:
            found = span_link(dict(span.attributes), INDEX, span.name)
            refs.setdefault(span.name, set()).add(found.ref)
    if topology == "classic":
        assert refs == {name: {"newton-eol"} for name in SCHEDULING[2:5]}
    else:
        assert refs == {name: {"pike-eol"} for name in SCHEDULING}
        stale = sorted({f"{s.name} -> {s.attributes[attr.UPSTREAM_URL]}" for s in spans
                        if any(f"/{ref}/" in str(s.attributes.get(attr.UPSTREAM_URL, ""))
                               for ref in PRE_PLACEMENT)})
        assert stale == []
