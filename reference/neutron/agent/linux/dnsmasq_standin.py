"""A stand-in for dnsmasq: same command line, same files, same SIGHUP reload.

Run by the DHCP agent when the real dnsmasq is not wanted or not there (see
``dhcp.py``). It does what the agent can observe of dnsmasq and no more:

* writes ``--pid-file``, logs to ``--log-facility`` in dnsmasq's words
  (``read <file>`` for each file it loads);
* loads ``--dhcp-hostsfile`` (``mac,name,ip`` lines), ``--dhcp-optsfile`` and
  ``--addn-hosts``, and on ``SIGHUP`` loads them again;
* logs the static lease it would hand each host, and after every load writes
  what it loaded to ``--status-file`` (JSON: pid, loads, ranges, hosts, options),
  which is how tests see that a reload really happened;
* exits on ``SIGTERM``/``SIGINT``.

It answers no DHCP packets: no guest on loopback would send any.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="dnsmasq-standin", allow_abbrev=False)
    parser.add_argument("--dhcp-hostsfile", required=True)
    parser.add_argument("--dhcp-optsfile")
    parser.add_argument("--addn-hosts")
    parser.add_argument("--pid-file")
    parser.add_argument("--log-facility")
    parser.add_argument("--dhcp-range", action="append", default=[])
    parser.add_argument("--status-file")
    args, _ignored = parser.parse_known_args(argv)  # the options only dnsmasq acts on
    return args


class StandIn:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.pid = os.getpid()
        self.loads = 0
        self.log_file = open(args.log_facility, "a") if args.log_facility else sys.stderr

    def log(self, tag: str, message: str) -> None:
        self.log_lines([(tag, message)])

    def log_lines(self, entries: list[tuple[str, str]]) -> None:
        """Append ``entries`` in one write, so a reader never sees half a load."""
        stamp = time.strftime("%b %d %H:%M:%S")
        self.log_file.write("".join(f"{stamp} {tag}[{self.pid}]: {message}\n"
                                    for tag, message in entries))
        self.log_file.flush()

    def _read(self, path: str | None) -> list[str]:
        if not path:
            return []
        try:
            lines = Path(path).read_text().splitlines()
        except OSError as exc:
            self.log("dnsmasq", f"cannot read {path}: {exc.strerror}")
            return []
        return [line.strip() for line in lines if line.strip() and not line.startswith("#")]

    def load(self) -> None:
        hosts = []
        for line in self._read(self.args.dhcp_hostsfile):
            fields = line.split(",")
            if len(fields) >= 3:
                hosts.append({"mac": fields[0], "name": fields[-2], "ip": fields[-1]})
        lines = [("dnsmasq-dhcp", f"read {self.args.dhcp_hostsfile}")]
        options = self._read(self.args.dhcp_optsfile)
        if self.args.dhcp_optsfile:
            lines.append(("dnsmasq-dhcp", f"read {self.args.dhcp_optsfile}"))
        addn = self._read(self.args.addn_hosts)
        lines += [("dnsmasq-dhcp", f"static lease {host['ip']} for {host['mac']} "
                                   f"({host['name']})") for host in hosts]
        self.loads += 1
        if self.args.status_file:
            status = {"pid": self.pid, "loads": self.loads, "ranges": self.args.dhcp_range,
                      "hosts": hosts, "options": options, "addn_hosts": addn}
            tmp = Path(self.args.status_file).with_suffix(".tmp")
            tmp.write_text(json.dumps(status, indent=1))
            os.replace(tmp, self.args.status_file)
        # The agent waits for "read <hostsfile>" in the log: it comes last, once the
        # whole load (and its status file) is done.
        self.log_lines(lines)

    def run(self) -> int:
        hup = threading.Event()
        stop = threading.Event()

        def later(event):
            # Set from a new thread: the handler runs in the main thread, which may
            # hold the event's lock inside wait(); setting it there could deadlock.
            return lambda *_: threading.Thread(target=event.set).start()

        signal.signal(signal.SIGHUP, later(hup))
        signal.signal(signal.SIGTERM, later(stop))
        signal.signal(signal.SIGINT, later(stop))
        parent = os.getppid()
        if self.args.pid_file:
            Path(self.args.pid_file).write_text(f"{self.pid}\n")
        self.log("dnsmasq", "started, novalab stand-in (DNS disabled)")
        for dhcp_range in self.args.dhcp_range:
            fields = [f for f in dhcp_range.split(",") if not f.startswith(("set:", "tag:"))]
            self.log("dnsmasq-dhcp", f"DHCP, static leases only on {fields[0]}, "
                                     f"lease time {fields[-1]}")
        self.load()
        while not stop.is_set():
            if hup.wait(0.05):
                hup.clear()
                self.load()
            if os.getppid() != parent:  # the agent died without stopping us
                break
        self.log("dnsmasq", "exiting on receipt of SIGTERM")
        if self.args.pid_file:
            Path(self.args.pid_file).unlink(missing_ok=True)
        return 0


def main(argv: list[str] | None = None) -> int:
    return StandIn(parse_args(sys.argv[1:] if argv is None else argv)).run()


if __name__ == "__main__":
    sys.exit(main())
