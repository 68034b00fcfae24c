"""Lab 17: the learner's server actions, read from Nova's instance actions and their traces.

Nova lists one instance action per request that changed the server (``openstack
server event list``), with the request's id; each id finds the request's trace
in the trace store. There every save of the state machine is the event
``Instance.save`` on the span that saved it (nova-api's ``API.<action>``, then the
conductor's ``ConductorManager.instance_update`` for the host): the states it
wrote and the task state it expected. The checks compare those events with one
another and the answers with them; nothing is compared with a table of what an
action should do.
"""

from datetime import UTC, datetime

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr

SAVE = "Instance.save"
# What the learner runs (step 2-5 of the guide); reboot twice: soft and hard.
HOST_ACTIONS = ("stop", "start", "reboot", "pause", "unpause", "suspend", "resume")
STOP = "ServersController._stop"


def _server(ctx) -> dict:
    return ctx.require_server(ctx.names["server"], "boot it (step 1 of the guide)")


def _actions(ctx) -> list[dict]:
    """The server's instance actions, oldest first."""
    server = _server(ctx)
    listed = ctx.api.get("compute", f"/servers/{server['id']}/os-instance-actions")
    return sorted(listed["instanceActions"], key=lambda a: a["start_time"])


def _saves(ctx, request_id: str) -> list[dict]:
    """The ``Instance.save`` events of one request's trace, in time order, each as its
    attributes plus the service and the span that saved."""
    key = ("saves", request_id)
    if key not in ctx._boots:
        trace, _ = ctx.request_trace(request_id, "`openstack server event list SERVER`")
        found = sorted(((event.time_ns, span, event.attributes) for span in trace
                        for event in span.events if event.name == SAVE), key=lambda e: e[0])
        ctx._boots[key] = [dict(attributes, service=span.service, span_id=span.span_id)
                           for _, span, attributes in found]
    return ctx._boots[key]


def _task_states(saves: list[dict]) -> list[str]:
    return [str(s[attr.NOVA_TASK_STATE]) for s in saves if attr.NOVA_TASK_STATE in s]


def _broken_link(saves: list[dict]) -> str:
    """Why the saves are not one state machine run to its end ('' when they are)."""
    states = [s for s in saves if attr.NOVA_TASK_STATE in s]
    if not states:
        return "no save of its task state"
    if states[0]["service"] != "nova-api":
        return f"the first save was {states[0]['service']}'s, not nova-api's"
    for before, after in zip(states, states[1:], strict=False):
        expected = list(after.get(attr.NOVA_EXPECTED_TASK_STATE) or ())
        if str(before[attr.NOVA_TASK_STATE]) not in expected:
            return (f"{after['service']} saved task_state {after[attr.NOVA_TASK_STATE]} "
                    f"expecting {expected}, not {before[attr.NOVA_TASK_STATE]}")
    if str(states[-1][attr.NOVA_TASK_STATE]) != "None":
        return f"it ended with task_state {states[-1][attr.NOVA_TASK_STATE]}, not None"
    return ""


def _reboots(ctx) -> dict[str, str]:
    """The request ids of the reboots by type, read from the task state nova-api saved."""
    found = {}
    for action in _actions(ctx):
        if action["action"] == "reboot":
            states = _task_states(_saves(ctx, action["request_id"]))
            if states:
                found["HARD" if states[0] == "rebooting_hard" else "SOFT"] = \
                    action["request_id"]
    return found


@check("{server} is ACTIVE and unlocked")
def active_and_unlocked(ctx):
    server = ctx.require_active(ctx.names["server"], "boot it (step 1 of the guide)")
    detail = ctx.admin_api.get("compute", f"/servers/{server['id']}")["server"]
    if detail.get("locked"):
        raise Fail(f"{server['name']} is still locked: `openstack server unlock "
                   f"{server['name']}` (step 5)")


@check("{server} was stopped, started, rebooted soft and hard, paused, suspended, locked")
def every_action(ctx):
    done = [a["action"] for a in _actions(ctx)]
    missing = [name for name in (*HOST_ACTIONS, "lock", "unlock") if name not in done]
    if missing:
        raise Fail(f"{ctx.names['server']}'s events (`openstack server event list`) have no "
                   f"{', '.join(missing)} (steps 2-5 of the guide)")
    reboots = _reboots(ctx)
    for kind, option in (("SOFT", ""), ("HARD", " --hard")):
        if kind not in reboots:
            raise Fail(f"no {kind.lower()} reboot of {ctx.names['server']}: `openstack "
                       f"server reboot{option} {ctx.names['server']}` (step 3)")


@check("each action's trace saves the state machine from nova-api's task to None")
def transitions(ctx):
    for action in _actions(ctx):
        if action["action"] not in HOST_ACTIONS:
            continue
        why = _broken_link(_saves(ctx, action["request_id"]))
        if why:
            raise Fail(f"the {action['action']} {action['request_id']}: {why} "
                       f"(`novalab trace show --request-id {action['request_id']} "
                       "--attributes`, its events Instance.save)")


@check("the saves of your hard reboot, in order (answer hard-reboot)")
def hard_reboot(ctx):
    request_id = _reboots(ctx).get("HARD")
    if request_id is None:
        raise Fail(f"no hard reboot of {ctx.names['server']} (step 3)")
    saves = [s for s in _saves(ctx, request_id) if attr.NOVA_TASK_STATE in s]
    saved = [s["span_id"] for s in saves]
    given = [s.strip().lower() for s in ctx.answer("hard-reboot").replace(",", " ").split()]
    if given != saved:
        states = ", ".join(str(s[attr.NOVA_TASK_STATE]) for s in saves)
        raise Fail(f"{', '.join(given)} are not the spans that saved the task states of your "
                   f"hard reboot {request_id}: {len(saved)} saves ({states}), each the span "
                   "id of the span its Instance.save event is on, in time order")


@check("the save of {server}'s power state when it was suspended (answer suspended-save)")
def suspended_save(ctx):
    suspends = [a for a in _actions(ctx) if a["action"] == "suspend"]
    if not suspends:
        raise Fail(f"{ctx.names['server']} was never suspended (step 4)")
    spans = {s["span_id"] for a in suspends for s in _saves(ctx, a["request_id"])
             if attr.NOVA_POWER_STATE in s and str(s.get(attr.NOVA_VM_STATE)) == "suspended"}
    given = ctx.answer("suspended-save").lower()
    if given not in spans:
        raise Fail(f"{given!r} is not the span whose Instance.save wrote vm_state suspended "
                   f"and a power_state in a suspend of {ctx.names['server']} (the host's "
                   "save, through the conductor)")


@check("the stop refused while {server} was locked (answer refused-stop)")
def refused_stop(ctx):
    server = _server(ctx)
    given = ctx.answer("refused-stop")
    trace, answered = ctx.request_trace(given, "`novalab trace list --all` (status 409)")
    api = [s for s in answered if s.service == "nova-api"]
    stops = [s for s in trace if s.name == STOP and s.get(attr.NOVA_INSTANCE_UUID) == server["id"]]
    if not api or not stops:
        raise Fail(f"{given} is not a stop of {ctx.names['server']}: its trace has no "
                   f"nova-api {STOP} for {server['id']}")
    status = api[0].get(attr.HTTP_RESPONSE_STATUS_CODE)
    if str(status) != "409":
        raise Fail(f"nova-api answered {given} with {status}, not 409: stop it while it is "
                   "locked (step 5)")
    began = api[0].start_ns / 1e9
    times = {a["action"]: _epoch(a["start_time"]) for a in _actions(ctx)
             if a["action"] in ("lock", "unlock")}
    if not times.get("lock", began) <= began <= times.get("unlock", began):
        raise Fail(f"{given} was not refused between your lock and your unlock: was the "
                   "server locked by someone else then?")


@check("console.txt in your lab folder is the console log of {server}")
def console_log(ctx):
    path = ctx.workdir / "console.txt"
    if not path.exists():
        raise Fail(f"no {path}: `openstack console log show {ctx.names['server']} > "
                   "console.txt` in that folder (step 6)")
    mine = [line for line in path.read_text().splitlines() if line.strip()]
    server = _server(ctx)
    response = ctx.api.request("POST", "compute", f"/servers/{server['id']}/action",
                               json={"os-getConsoleOutput": {}})
    response.raise_for_status()
    log = set(response.json()["output"].splitlines())
    strange = [line for line in mine if line not in log]
    if not mine or strange:
        raise Fail(f"console.txt is {'empty' if not mine else 'not'} the guest's console log "
                   f"of {ctx.names['server']}" + (f": {strange[0]!r}" if strange else ""))
    # Lines every guest prints (cloud-init's banner) are no proof: the log must hold
    # this guest's own network device, its port's MAC address (cloud-init's ci-info).
    macs = {p["mac_address"].lower() for p in ctx.api.get(
        "network", "/v2.0/ports", device_id=server["id"])["ports"]}
    if not any(mac in line.lower() for line in mine for mac in macs):
        raise Fail(f"console.txt does not show the network device of {ctx.names['server']} "
                   f"(its port's MAC, {', '.join(sorted(macs)) or 'none'}): save the whole "
                   "log, `openstack console log show SERVER > console.txt`")


def _epoch(stamp: str) -> float:
    """An instance action's start_time (UTC, no zone) in seconds since the epoch."""
    return datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()
