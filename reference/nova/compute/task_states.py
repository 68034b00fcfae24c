"""What an instance is doing right now (``nova/compute/task_states.py``); ``None`` when idle.

A boot walks SCHEDULING -> None (on the host) -> NETWORKING -> BLOCK_DEVICE_MAPPING
-> SPAWNING -> None, each step saved through the conductor.
"""

SCHEDULING = "scheduling"
BLOCK_DEVICE_MAPPING = "block_device_mapping"
NETWORKING = "networking"
SPAWNING = "spawning"
DELETING = "deleting"
