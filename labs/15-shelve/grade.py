"""Lab 15: the learner's server shelved and unshelved, read from the two requests' traces.

Every answer is compared with the shelve session of the learner's server (its
shelve and unshelve requests, joined as ``novalab flow check --flow shelve``
joins them): the snapshot's id from the URL of the upload (step 8), the
unshelve's request id from step 14, the span that took the conductor's call
for a host (step 21) and the cast to the chosen host (step 25), whose host must
be where the admin API says the server is now. A session from before the
attempt started does not count.
"""

import re

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr
from novalab.tracing.model import Trace

_IMAGE_FILE = re.compile(r"/images/([^/]+)/file$")


def _session(ctx):
    """The flow check of the shelve session of the learner's server (read once)."""
    from novalab.diagrams.check import check as flow_check
    from novalab.diagrams.flows import get_flow
    from novalab.diagrams.load import load_trace
    from novalab.tracing.store import NoTrace

    server = ctx.require_server(ctx.names["server"], "boot it (step 1 of the guide)")
    key = ("shelve", server["id"])
    if key not in ctx._boots:
        flow = get_flow("shelve")
        try:
            spans = flow.select(ctx.store, server=server["id"], timeout=ctx.trace_timeout)
            ctx._require_this_attempt(Trace.of(spans), f"the shelve of {ctx.names['server']}")
            ctx._boots[key] = flow_check(load_trace(spans), flow)
        except Fail as failure:
            ctx._boots[key] = failure
        except NoTrace as exc:
            ctx._boots[key] = Fail(f"{ctx.names['server']} has no shelve request in the trace "
                                   f"store ({exc}): shelve it (step 2)")
    if isinstance(ctx._boots[key], Fail):
        raise ctx._boots[key]
    return ctx._boots[key]


def _step(ctx, number: int, what: str):
    result = _session(ctx).result(number)
    if not result.matched:
        raise Fail(f"step {number} ({result.step.text}) is missing from the shelve session of "
                   f"{ctx.names['server']}: {what}")
    return result.span


@check("{server} was shelved, offloaded and unshelved, and is ACTIVE again")
def unshelved(ctx):
    server = ctx.require_server(ctx.names["server"], "boot it (step 1 of the guide)")
    if not _session(ctx).result(13).matched:
        raise Fail(f"{ctx.names['server']} was never SHELVED_OFFLOADED in its shelve session "
                   "(step 13 of the table): wait for it before you unshelve")
    _step(ctx, 14, "unshelve it (step 4 of the guide)")
    if server["status"] != "ACTIVE":
        raise Fail(f"{server['name']} is {server['status']}: wait for ACTIVE after the unshelve")


@check("the shelve session of {server} matches every step of the shelve table")
def whole_session(ctx):
    result = _session(ctx)
    if not result.ok:
        missing = [r.step.number for r in result.results if r.missing]
        raise Fail(f"{result.summary}; missing: {missing}: "
                   f"`novalab flow check --flow shelve --server {ctx.names['server']}`")


@check("the image {server} was shelved into, now deleted (answer shelved-image)")
def shelved_image(ctx):
    upload = _step(ctx, 8, "the host uploaded no snapshot")
    found = _IMAGE_FILE.search(str(upload.get(attr.URL_PATH) or ""))
    if found is None:
        raise Fail(f"glance-api's upload span has no image id in its url.path: {upload.name}")
    given = ctx.answer("shelved-image")
    if given != found.group(1):
        raise Fail(f"{given!r} is not the image the shelve uploaded the disk into: "
                   f"`openstack image list` while the server is SHELVED_OFFLOADED, or the "
                   "url.path of glance-api's PUT /v2/images/<id>/file")
    response = ctx.api.request("GET", "image", f"/v2/images/{given}")
    if response.status_code != 404:
        raise Fail(f"the snapshot {given} is still in Glance ({response.status_code}): "
                   "the unshelve deletes it once the guest runs (step 31)")


@check("the request id of the unshelve (answer unshelve-request)")
def unshelve_request(ctx):
    request_id = _step(ctx, 14, "unshelve it").get(attr.OPENSTACK_REQUEST_ID)
    given = ctx.answer("unshelve-request")
    if given != request_id:
        raise Fail(f"{given!r} is not the request id of your unshelve: `openstack server "
                   "event list SERVER` lists it beside the action unshelve")


def _same_span(ctx, key: str, number: int, what: str, where: str):
    """The span of shelve-table step ``number``, which the answer ``key`` must name."""
    span = _step(ctx, number, what)
    given = ctx.answer(key).lower()
    if given != span.span_id:
        raise Fail(f"{given!r} is not the span id of {where} in the shelve session of "
                   f"{ctx.names['server']}: step {number} of `novalab flow check --flow shelve "
                   "--server SERVER` ends with it")
    return span


@check("the scheduler's side of the conductor's call for a host (answer picked-by)")
def picked_by(ctx):
    _same_span(ctx, "picked-by", 21, "did the conductor call select_destinations?",
               "the CONSUMER span that took the conductor's call select_destinations")


@check("the cast of the unshelve to the host {server} came back on (answer sent-to-host)")
def sent_to_host(ctx):
    sent = _same_span(ctx, "sent-to-host", 25, "did the conductor cast to a host?",
                      "the conductor's cast of unshelve_instance to the chosen host")
    taken = _step(ctx, 26, "did a compute host take the unshelve?")
    server = ctx.require_server(ctx.names["server"])
    now = ctx.admin_api.get("compute", f"/servers/{server['id']}")["server"].get(
        "OS-EXT-SRV-ATTR:host")
    if taken.host != now:
        raise Fail(f"the unshelve went to {taken.host}, but {ctx.names['server']} is on {now} "
                   "now: was it moved or shelved again since?")
    if not str(sent.name).endswith(f"compute.{now}"):
        raise Fail(f"{sent.name} is not a cast to {now}'s queue (compute.{now})")
