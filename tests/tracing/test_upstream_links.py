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


def test_every_link_in_the_source_exists_upstream():
    links, unresolved = source_links(ROOT)
    assert unresolved == []
    assert {link.repo for link in links} >= BOOT_REPOS
    problems = [p for link in links if (p := problem(link, INDEX))]
    assert problems == [], "\n".join(problems + ["fix the link, or rebuild the pinned list "
                                                 "with scripts/upstream_index.py"])


@pytest.mark.parametrize("topology", ["classic", "modern"])
def test_every_link_in_a_boot_trace_exists_upstream(cloud_factory, topology):
    result = boot(cloud_factory(topology=topology), BootRequest(name="upstream-links"))
    assert result.active, result.server
    links, problems = [], []
    for span in result.spans:
        if attr.UPSTREAM_URL in span.attributes:
            found = span_link(dict(span.attributes), INDEX, span.name)
            (links if isinstance(found, Link) else problems).append(found)
    assert {link.repo for link in links} >= BOOT_REPOS
    problems += [p for link in links if (p := problem(link, INDEX))]
    assert problems == [], "\n".join(sorted(set(problems)))
    # Upstream never reads an image through the RADOS gateway: the span says so and
    # links to the closest upstream function instead of pretending.
    download = next(s for s in result.spans if s.name == "rgw_download")
    assert download.attributes[attr.CODE_FUNCTION_NAME] == \
        "nova.image.glance.GlanceImageServiceV2.rbd_download"
    assert "upstream Nova never does" in download.attributes[attr.NOVALAB_STAND_IN]
