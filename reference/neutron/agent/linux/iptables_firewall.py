"""The L2 agent's firewall driver: a port's security group rules as iptables chains.

Upstream's ``IptablesFirewallDriver`` (``neutron/agent/linux/iptables_firewall.py``)
gives each port three chains in the ``filter`` table, named after the port's
device, wrapped with the agent's binary name (``neutron-linuxbri-``):

* ``i<port>``, traffic *to* the VM: established flows, then one ``RETURN`` per
  ingress rule, invalid packets dropped, the rest to ``sg-fallback`` (DROP);
* ``o<port>``, traffic *from* the VM: DHCP requests allowed, a jump to the
  spoofing chain, DHCP answers from the VM dropped, then the egress rules alike;
* ``s<port>``, anti-spoofing: only the port's own MAC and addresses get through.

A rule whose remote is a group matches that group's members through an ipset,
``NIPv4<group id>``, which the agent keeps filled with their addresses. A
stateless group (``stateful`` false) has no ``RELATED,ESTABLISHED`` rule: replies
pass only where a rule lets them.

**Stand-in.** novalab's agent has no root and its hosts no kernel netfilter, so
nothing is written to iptables: this driver computes the same lines
``iptables-save`` would show (IPv4 and IPv6) and the ipsets' members, keeps them
in the agent's memory (:meth:`chains`, :attr:`ipsets`), and records them on its
span (``novalab.firewall.rules``), so a learner sees in the trace which rules a
port got. No packet is ever filtered by them: the guest is a stand-in too.
"""

from __future__ import annotations

import threading

from opentelemetry import trace

from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

IPTABLES_FIREWALL = "neutron/agent/linux/iptables_firewall.py"
STAND_IN = ("iptables: the chains are computed and kept in the agent's memory, not "
            "written to a kernel")
# iptables_manager's wrap: the binary name, cut to 16 characters.
WRAP = "neutron-linuxbri"
CHAIN_LEN = 11  # MAX_IPTABLES_CHAIN_LEN_WRAP
IPSET_NAME_MAX_LENGTH = 31
PROTOCOL_NUMBERS = {"tcp": "6", "udp": "17", "icmp": "1", "ipv6-icmp": "58", "sctp": "132",
                    "dccp": "33", "udplite": "136"}


def ipset_name(sg_id: str, ethertype: str) -> str:
    """``IpsetManager.get_name``: ``N`` + ethertype + group id, at most 31 characters."""
    return ("N" + ethertype + sg_id)[:IPSET_NAME_MAX_LENGTH]


def chain_name(port_id: str, direction: str) -> str:
    """``_port_chain_name`` (``i``, ``o`` or ``s`` + the device), wrapped."""
    return f"{WRAP}-" + (direction + port_id)[:CHAIN_LEN]


class IptablesFirewallDriver:
    """What the agent knows of each filtered port, group and group membership."""

    def __init__(self, tracer):
        self.tracer = tracer
        self.ports: dict[str, dict] = {}  # filtered ports, by device (port id)
        self.sg_rules: dict[str, list[dict]] = {}
        self.sg_members: dict[str, dict[str, list[str]]] = {}
        self.sg_stateful: dict[str, bool] = {}
        self._chains: dict[str, dict[str, list[str]]] = {}
        self._lock = threading.Lock()

    # What the agent feeds it ---------------------------------------------------------------

    def update_security_group_rules(self, sg_id: str, sg_rules: list[dict]) -> None:
        self.sg_rules[sg_id] = sg_rules

    def update_security_group_members(self, sg_id: str, sg_members: dict) -> None:
        self.sg_members[sg_id] = sg_members

    @property
    def ipsets(self) -> dict[str, list[str]]:
        """The ipsets a host would have: one per remote group and ethertype with members."""
        return {ipset_name(sg, ethertype): ips for sg, members in self.sg_members.items()
                for ethertype, ips in members.items() if ips}

    # Port filters ----------------------------------------------------------------------------

    @upstream(IPTABLES_FIREWALL, "IptablesFirewallDriver.prepare_port_filter",
              stand_in=STAND_IN)
    def prepare_port_filter(self, port: dict) -> None:
        self._apply(port)

    @upstream(IPTABLES_FIREWALL, "IptablesFirewallDriver.update_port_filter",
              stand_in=STAND_IN)
    def update_port_filter(self, port: dict) -> None:
        self._apply(port)

    @upstream(IPTABLES_FIREWALL, "IptablesFirewallDriver.remove_port_filter",
              stand_in=STAND_IN)
    def remove_port_filter(self, port: dict) -> None:
        trace.get_current_span().set_attribute(attr.NEUTRON_PORT_ID, port["device"])
        with self._lock:
            self.ports.pop(port["device"], None)
            self._chains.pop(port["device"], None)

    def chains(self, port_id: str) -> dict[str, list[str]]:
        """The port's lines, ``{"iptables": [...], "ip6tables": [...]}`` ({} if unfiltered)."""
        with self._lock:
            return {family: list(lines)
                    for family, lines in self._chains.get(port_id, {}).items()}

    def _apply(self, port: dict) -> None:
        lines = {"iptables": self._port_lines(port, "IPv4"),
                 "ip6tables": self._port_lines(port, "IPv6")}
        with self._lock:
            self.ports[port["device"]] = port
            self._chains[port["device"]] = lines
        trace.get_current_span().set_attributes({
            attr.NEUTRON_PORT_ID: port["device"],
            attr.NEUTRON_SECURITY_GROUP_IDS: list(port.get("security_groups", [])),
            attr.NOVALAB_FIREWALL_RULES: lines["iptables"] + lines["ip6tables"]})

    # The lines -------------------------------------------------------------------------------

    def _port_lines(self, port: dict, ethertype: str) -> list[str]:
        device = port["device"]
        ingress, egress, spoof = (chain_name(device, d) for d in ("i", "o", "s"))
        ipv4 = ethertype == "IPv4"
        lines = [f"-A {ingress} {rule}" for rule in self._sg_lines(port, "ingress", ethertype)]
        fixed = []
        if ipv4:
            fixed = ["-s 0.0.0.0/32 -d 255.255.255.255/32 -p udp -m udp --sport 68 "
                     "--dport 67 -j RETURN", f"-j {spoof}",
                     "-p udp -m udp --sport 68 --dport 67 -j RETURN",
                     "-p udp -m udp --sport 67 --dport 68 -j DROP"]
        else:
            fixed = [f"-j {spoof}", "-p ipv6-icmp -m icmp6 --icmpv6-type 134 -j DROP",
                     "-p udp -m udp --sport 546 --dport 547 -j RETURN",
                     "-p udp -m udp --sport 547 --dport 546 -j DROP"]
        lines += [f"-A {egress} {rule}" for rule in
                  fixed + self._sg_lines(port, "egress", ethertype)]
        mac = port["mac_address"].upper()
        addresses = [ip for ip in port.get("fixed_ips", []) if (":" in ip) != ipv4]
        prefix = 32 if ipv4 else 128
        lines += [f"-A {spoof} -s {ip}/{prefix} -m mac --mac-source {mac} -j RETURN"
                  for ip in addresses]
        lines.append(f"-A {spoof} -j DROP")
        return lines

    def _sg_lines(self, port: dict, direction: str, ethertype: str) -> list[str]:
        """``_convert_sgr_to_iptables_rules`` for the port's rules of one direction."""
        groups = port.get("security_groups", [])
        stateful = all(self.sg_stateful.get(sg, True) for sg in groups)
        lines = ["-m state --state RELATED,ESTABLISHED -j RETURN"] if stateful else []
        for sg in groups:
            for rule in self.sg_rules.get(sg, []):
                if rule["direction"] != direction or rule["ethertype"] != ethertype:
                    continue
                line = self._rule_args(rule)
                if line and line not in lines:
                    lines.append(line)
        lines += ["-m state --state INVALID -j DROP", f"-j {WRAP}-sg-fallback"]
        return lines

    def _rule_args(self, rule: dict) -> str | None:
        args = []
        if rule.get("remote_group_id"):
            name = ipset_name(rule["remote_group_id"], rule["ethertype"])
            if name not in self.ipsets:
                return None  # upstream creates no ipset for an empty group
            args += self._protocol_and_port_args(rule)
            args += ["-m set --match-set", name,
                     "src" if rule["direction"] == "ingress" else "dst"]
        else:
            prefix = rule.get("remote_ip_prefix")
            if prefix and prefix not in ("0.0.0.0/0", "::/0"):
                args += ["-s" if rule["direction"] == "ingress" else "-d", prefix]
            args += self._protocol_and_port_args(rule)
        return " ".join([*args, "-j RETURN"])

    @staticmethod
    def _protocol_and_port_args(rule: dict) -> list[str]:
        protocol = rule.get("protocol")
        if not protocol:
            return []
        low, high = rule.get("port_range_min"), rule.get("port_range_max")
        name = {v: k for k, v in PROTOCOL_NUMBERS.items()}.get(protocol, protocol)
        if name == "icmp" and rule["ethertype"] == "IPv6":
            name = "ipv6-icmp"
        if name in ("icmp", "ipv6-icmp"):
            args = ["-p", name]
            if low is not None:
                kind = "--icmp-type" if name == "icmp" else "--icmpv6-type"
                module = "icmp" if name == "icmp" else "icmp6"
                args += ["-m", module, kind, f"{low}/{high}" if high is not None else
                         str(low)]
            return args
        args = ["-p", name]
        if low is not None:
            args += ["-m", name, "--dport", str(low) if low == high else f"{low}:{high}"]
        return args
