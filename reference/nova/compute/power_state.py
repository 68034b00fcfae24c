"""The hypervisor's view of a guest (``nova/compute/power_state.py``), as stored in the DB."""

NOSTATE = 0x00
RUNNING = 0x01
PAUSED = 0x03
SHUTDOWN = 0x04  # the VM is powered off
CRASHED = 0x06
SUSPENDED = 0x07

STATE_MAP = {
    NOSTATE: "pending",
    RUNNING: "running",
    PAUSED: "paused",
    SHUTDOWN: "shutdown",
    CRASHED: "crashed",
    SUSPENDED: "suspended",
}
