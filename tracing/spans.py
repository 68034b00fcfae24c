"""Spans for the internal methods of the reference services, named after upstream.

``@upstream("nova/compute/manager.py", "ComputeManager._build_resources")`` on a
method makes each call an INTERNAL span named ``ComputeManager._build_resources``
with ``code.function.name`` (``nova.compute.manager.ComputeManager._build_resources``),
``code.file.path`` (``nova/compute/manager.py``) and a link to the upstream file,
so a learner reading the trace can open the real code. The span is made by the
tracer of the object the method belongs to (``self.tracer``): the service that
really did the work.

``ref`` names the upstream tree: ``master`` by default, or an older branch for
the few seams novalab keeps from the classic, pre-cells Nova (see
``docs/decisions.md``).
"""

from __future__ import annotations

import functools

from opentelemetry import trace

from novalab.tracing import attributes as attr

UPSTREAM_REPOS = {
    "nova": "https://opendev.org/openstack/nova",
    "keystone": "https://opendev.org/openstack/keystone",
    "glance": "https://opendev.org/openstack/glance",
    "cinder": "https://opendev.org/openstack/cinder",
    "neutron": "https://opendev.org/openstack/neutron",
    "placement": "https://opendev.org/openstack/placement",
}


def upstream_url(path: str, ref: str = "master") -> str:
    project = path.split("/", 1)[0]
    repo = UPSTREAM_REPOS.get(project, UPSTREAM_REPOS["nova"])
    kind = "branch" if ref == "master" or "/" in ref else "tag"
    return f"{repo}/src/{kind}/{ref}/{path}"


def code_attributes(path: str, qualname: str, ref: str = "master") -> dict[str, str]:
    module = path.removesuffix(".py").replace("/", ".")
    return {
        attr.CODE_FUNCTION_NAME: f"{module}.{qualname}",
        attr.CODE_FILE_PATH: path,
        attr.UPSTREAM_URL: upstream_url(path, ref),
    }


def upstream(path: str, qualname: str, *, ref: str = "master",
             placement_ref: str | None = None,
             kind: trace.SpanKind = trace.SpanKind.INTERNAL,
             name: str | None = None, stand_in: str | None = None):
    """Decorate a method so each call is a span standing for upstream ``qualname``.

    The span is named ``qualname`` unless ``name`` is given. ``stand_in`` marks
    work upstream never does (``novalab.stand_in`` says what upstream does
    instead): ``qualname`` is then only the closest upstream function, not a
    description of the span. ``placement_ref`` is the release to link instead when
    the object schedules with placement (its ``uses_placement`` is true: the modern
    topology), for a seam whose code changed when Nova did so: a span links the
    release whose code does what the span does.
    """
    static = code_attributes(path, qualname, ref)
    placed = code_attributes(path, qualname, placement_ref) if placement_ref else static
    if stand_in is not None:
        static[attr.NOVALAB_STAND_IN] = placed[attr.NOVALAB_STAND_IN] = stand_in
    span_name = name or qualname

    def decorate(func):
        @functools.wraps(func)
        def wrapper(self, *args, **kwargs):
            attributes = placed if getattr(self, "uses_placement", False) else static
            with self.tracer.start_as_current_span(span_name, kind=kind, attributes=attributes):
                return func(self, *args, **kwargs)

        wrapper.__upstream__ = static[attr.CODE_FUNCTION_NAME]
        return wrapper

    return decorate


def set_instance_attributes(span: trace.Span, instance: dict) -> None:
    """Record an instance's identity and state on ``span`` (a dict row as the conductor returns)."""
    if not span.is_recording():
        return
    for key, name in ((attr.NOVA_INSTANCE_UUID, "uuid"), (attr.NOVA_VM_STATE, "vm_state"),
                      (attr.NOVA_TASK_STATE, "task_state"), (attr.NOVA_POWER_STATE, "power_state"),
                      (attr.NOVA_HOST, "host")):
        value = instance.get(name)
        if value is not None:
            span.set_attribute(key, value)
