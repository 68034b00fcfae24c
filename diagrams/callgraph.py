"""Call graphs: which component called which, how often, and how long it took.

Components come from the spans: an internal span named after an upstream
function (``ComputeManager._build_resources``, with ``code.function.name``)
belongs to its class; a module-level function (``nova.virt.images.fetch``) to
its module. Nova's services are opened up into their classes, one cluster per
service; every other OpenStack service (keystone, glance, neutron, cinder,
ceph) is one box, as in the seed diagram. Infrastructure reached through
CLIENT spans (the database, libvirt, dnsmasq) gets a plain white node, and so
does the hypervisor, whose spans are its own (``qemu-kvm``: QEMU's librbd
opening a guest's Ceph disks).

Boxes are coloured by the seed's legend (``shared/seeds/003_*.txt``):

========  ==================================================================
yellow    API controllers (``*Controller``)
pink      scheduler classes (``FilterScheduler``, ``HostManager``, filters)
green     manager / framework classes (``*Manager``, rpc APIs, compute API)
cyan      the virt driver (``nova.virt.*``: ``LibvirtDriver``, images)
grey      clients of other services (``GlanceImageServiceV2``, neutron, cinder)
red       other OpenStack services
white     infrastructure and the client (not in the seed's legend)
========  ==================================================================

Edges: solid black for a Python call (including calls into a library that
reaches infrastructure: SQLAlchemy, libvirt-python), dashed black for REST,
reddish solid for AMQP, and (not in the seed's legend) dotted black for
another wire protocol, such as Ceph's messenger. Each edge is labelled with
its count and the total and mean latency: the caller's CLIENT span for a
request, the consumer's process span for AMQP, the callee's span for a
Python call.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from novalab.diagrams.hosts import addresses as hosts_addresses
from novalab.diagrams.hosts import by_service as hosts_by_service
from novalab.diagrams.hosts import label as host_label
from novalab.diagrams.model import Span, Trace
from novalab.diagrams.semantics import (
    http_method,
    is_hypervisor,
    is_messaging,
    messaging_operation,
)
from novalab.tracing import attributes as attr

FORMATS = ("svg", "png", "dot")

COLOURS = {
    "controller": "#fff176",
    "scheduler": "#f8bbd0",
    "manager": "#a5d6a7",
    "virt": "#80deea",
    "client": "#cfd8dc",
    "service": "#ef5350",
    "infra": "#ffffff",
    "actor": "#ffffff",
}
LEGEND = (("controller", "API controller classes"), ("scheduler", "Nova scheduler classes"),
          ("manager", "Nova manager (framework) classes"), ("virt", "Nova virt driver"),
          ("client", "clients of other services (REST)"), ("service", "other OpenStack services"),
          ("infra", "infrastructure, the client"))
EDGE_STYLES = {"python": {"style": "solid", "color": "#000000"},
               "rest": {"style": "dashed", "color": "#000000"},
               "amqp": {"style": "solid", "color": "#c0392b", "fontcolor": "#c0392b"},
               "wire": {"style": "dotted", "color": "#000000"}}
_GENERIC = {"API", "Manager", "Driver", "Client"}
_CLIENT_MODULES = ("nova.image.", "nova.network.", "nova.volume.", "nova.keymgr.")


@dataclass(frozen=True)
class Component:
    key: str
    label: str
    category: str
    cluster: str | None = None  # the Nova service it lives in
    url: str | None = None


def _is_nova(service: str) -> bool:
    return service.startswith("nova-")


def _split_code(span: Span) -> tuple[str, str] | None:
    """(module, qualname) of the upstream function a span stands for."""
    function = span.get(attr.CODE_FUNCTION_NAME)
    path = span.get(attr.CODE_FILE_PATH)
    if function and path:
        module = str(path).removesuffix(".py").replace("/", ".")
        if str(function).startswith(module + "."):
            return module, str(function)[len(module) + 1:]
    if function:
        parts = str(function).split(".")
        for i, part in enumerate(parts):
            if part[:1].isupper():
                return ".".join(parts[:i]), ".".join(parts[i:])
        return ".".join(parts[:-1]), parts[-1]
    return None


def _category(module: str, cls: str | None) -> str:
    if cls and cls.endswith("Controller"):
        return "controller"
    if module.startswith("nova.virt"):
        return "virt"
    if module.startswith(_CLIENT_MODULES):
        return "client"
    if module.startswith("nova.scheduler.") and not module.endswith((".rpcapi", ".manager")):
        return "scheduler"
    return "manager"


class CallGraph:
    """Components and aggregated edges of one trace."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.components: dict[str, Component] = {}
        self.edges: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        roots = {s.service for s in trace.roots}
        self._actors = roots | {"cloud-init"}
        self._build()

    # components
    def _add(self, component: Component) -> Component:
        return self.components.setdefault(component.key, component)

    def _service_node(self, service: str) -> Component:
        if service in self._actors:
            return self._add(Component(f"actor/{service}", service, "actor"))
        if is_hypervisor(service):
            return self._add(Component(f"infra/{service}", f"{service} (hypervisor)", "infra"))
        if _is_nova(service):
            return self._add(Component(f"{service}/entry", f"{service} (entry)", "manager",
                                       service))
        return self._add(Component(f"service/{service}", service, "service"))

    def component(self, span: Span) -> Component | None:
        """The component an INTERNAL span belongs to, if it is one."""
        if span.kind != "INTERNAL":
            return None
        if not _is_nova(span.service):
            return self._service_node(span.service)
        code = _split_code(span)
        if code is None:
            return self._service_node(span.service)
        module, qualname = code
        head = qualname.split(".", 1)[0]
        cls = head if head[:1].isupper() else None
        if cls:
            label = f"{module.split('.')[-2]}.{cls}" if cls in _GENERIC and "." in module \
                else cls
            key = f"{span.service}/{module}.{cls}"
        else:
            label = module.removeprefix("nova.").replace(".", "/") + ".py"
            key = f"{span.service}/{module}"
        return self._add(Component(key, label, _category(module, cls), span.service,
                                   span.get(attr.UPSTREAM_URL)))

    def owner(self, span: Span) -> Component:
        """The component that made ``span``: its nearest component ancestor in its service."""
        here: Span | None = span
        while here is not None and here.service == span.service:
            found = self.component(here)
            if found is not None:
                return found
            here = self.trace.parent(here)
        return self._service_node(span.service)

    def handler(self, span: Span) -> Component:
        """The component that handled a SERVER or CONSUMER span: its first component child."""
        if not _is_nova(span.service):
            return self._service_node(span.service)
        for child in self.trace.children(span):
            if child.service == span.service:
                found = self.component(child)
                if found is not None:
                    return found
        return self._service_node(span.service)

    def _infra(self, span: Span) -> Component:
        if span.get(attr.DB_SYSTEM_NAME) or span.get(attr.DB_SYSTEM):
            name = f"Database ({span.get(attr.DB_SYSTEM_NAME) or span.get(attr.DB_SYSTEM)})"
        else:
            name = str(span.get(attr.PEER_SERVICE) or span.get(attr.SERVER_ADDRESS) or "peer")
        return self._add(Component(f"infra/{name}", name, "infra"))

    # edges
    def _build(self) -> None:
        trace = self.trace
        for span in trace:
            parent = trace.parent(span)
            if span.kind == "INTERNAL":
                mine = self.component(span)
                if parent is not None and parent.kind == "INTERNAL" and \
                        parent.service == span.service:
                    theirs = self.owner(parent)
                    if mine is not None and theirs.key != mine.key:
                        self.edges[(theirs.key, mine.key, "python")].append(span.duration_ns)
            elif span.kind == "SERVER" and parent is not None and parent.service != span.service:
                source = self.owner(parent)
                target = self.handler(span)
                latency = parent.duration_ns if parent.kind == "CLIENT" else span.duration_ns
                kind = "rest" if http_method(span) else "wire"
                self.edges[(source.key, target.key, kind)].append(latency)
            elif span.kind == "CONSUMER" and messaging_operation(span) == "process":
                sender = parent if parent is not None and parent.kind == "PRODUCER" else next(
                    (trace.span(ln.span_id) for ln in span.links if trace.span(ln.span_id)), None)
                if sender is not None:
                    self.edges[(self.owner(sender).key, self.handler(span).key, "amqp")].append(
                        span.duration_ns)
            elif span.kind == "CLIENT" and not is_messaging(span):
                served = any(c.kind == "SERVER" and c.service != span.service
                             for c in trace.children(span))
                if not served:
                    self.edges[(self.owner(span).key, self._infra(span).key, "python")].append(
                        span.duration_ns)

    # output
    def to_dot(self) -> str:
        import graphviz

        graph = graphviz.Digraph("callgraph", graph_attr={
            "rankdir": "LR", "fontname": "Helvetica", "fontsize": "11", "nodesep": "0.25",
            "ranksep": "0.6", "label": f"Call graph of trace {self.trace.trace_id}",
            "labelloc": "t"},
            node_attr={"shape": "box", "style": "filled", "fontname": "Helvetica",
                       "fontsize": "10"},
            edge_attr={"fontname": "Helvetica", "fontsize": "8"})
        # A trace that crosses hosts (diagrams/hosts.py): a cluster per host around the
        # services that ran on it alone; one that ran on several says where, in its label.
        on = hosts_by_service(self.trace)
        where = hosts_addresses(self.trace) if on else {}
        homes: dict[str | None, dict[str | None, list[Component]]] = defaultdict(
            lambda: defaultdict(list))
        for component in sorted(self.components.values(), key=lambda c: c.key):
            service = component.cluster or (component.key.split("/", 1)[1]
                                             if component.key.startswith("service/") else None)
            ran_on = on.get(service, ()) if service else ()
            homes[ran_on[0] if len(ran_on) == 1 else None][component.cluster].append(component)
        for host in sorted(homes, key=lambda h: (h is not None, h or "")):
            if host is None:
                self._clusters(graph, homes[host], on)
                continue
            with graph.subgraph(name=f"cluster_host_{host}") as sub:
                ips = ", ".join(where.get(host, ()))
                sub.attr(label=f"host {host}" + (f" ({ips})" if ips else ""),
                         style="dashed", color="#546e7a")
                self._clusters(sub, homes[host], on)
        for (source, target, kind), latencies in sorted(self.edges.items()):
            total = sum(latencies) / 1e6
            label = f"{len(latencies)}× · {total:.2f} ms\\nmean {total / len(latencies):.2f} ms"
            graph.edge(source, target, label=label, **EDGE_STYLES[kind])
        graph.node("legend", label=_legend_label(), shape="plaintext", style="")
        return graph.source

    def _clusters(self, graph, clusters: dict[str | None, list[Component]],
                  on: dict[str, tuple[str, ...]]) -> None:
        """Each Nova service's cluster, and the components in none, into ``graph``."""
        for cluster in sorted(clusters, key=lambda c: (c is not None, c or "")):
            if cluster is None:
                for component in clusters[cluster]:
                    self._node(graph, component)
                continue
            ran_on = on.get(cluster, ())
            label = f"{cluster} {host_label(ran_on)}" if len(ran_on) > 1 else cluster
            with graph.subgraph(name=f"cluster_{cluster}") as sub:
                sub.attr(label=label, style="rounded", color="#90a4ae")
                for component in clusters[cluster]:
                    self._node(sub, component)

    @staticmethod
    def _node(graph, component: Component) -> None:
        attrs = {"label": component.label, "fillcolor": COLOURS[component.category]}
        if component.category == "infra":
            attrs["shape"] = "cylinder" if component.label.startswith("Database") else "box"
            attrs["style"] = "filled,dashed"
        if component.category == "actor":
            attrs["shape"] = "ellipse"
        if component.category == "service":
            attrs["fontcolor"] = "#ffffff"
        if component.url:
            attrs["URL"] = component.url
            attrs["tooltip"] = component.key.split("/", 1)[1]
        graph.node(component.key, **attrs)


def _legend_label() -> str:
    rows = "".join(f'<TR><TD BGCOLOR="{COLOURS[c]}" WIDTH="18"></TD><TD ALIGN="LEFT">{text}'
                   "</TD></TR>" for c, text in LEGEND)
    rows += ('<TR><TD>——</TD><TD ALIGN="LEFT">Python call</TD></TR>'
             '<TR><TD>- - -</TD><TD ALIGN="LEFT">REST call</TD></TR>'
             '<TR><TD>· · ·</TD><TD ALIGN="LEFT">other wire protocol (Ceph)</TD></TR>'
             '<TR><TD><FONT COLOR="#c0392b">——</FONT></TD><TD ALIGN="LEFT">'
             '<FONT COLOR="#c0392b">AMQP</FONT></TD></TR>')
    return f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3">{rows}</TABLE>>'


def render(trace: Trace, fmt: str = "svg") -> bytes | str:
    """The call graph as ``dot`` source (str) or rendered ``svg`` (str) / ``png`` (bytes)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    source = CallGraph(trace).to_dot()
    if fmt == "dot":
        return source
    import graphviz

    data = graphviz.Source(source).pipe(format=fmt)
    return data.decode("utf-8") if fmt == "svg" else data
