"""What an instance is doing right now (``nova/compute/task_states.py``); ``None`` when idle.

A boot walks SCHEDULING -> None (on the host) -> NETWORKING -> BLOCK_DEVICE_MAPPING
-> SPAWNING -> None, each step saved through the conductor.

A snapshot (``createImage``) walks IMAGE_SNAPSHOT_PENDING (nova-api) ->
IMAGE_SNAPSHOT (the host) -> IMAGE_PENDING_UPLOAD -> IMAGE_UPLOADING (the driver)
-> None. A shelve walks SHELVING -> SHELVING_IMAGE_PENDING_UPLOAD ->
SHELVING_IMAGE_UPLOADING (the same driver steps, renamed by the manager) -> None
in vm_state SHELVED, or SHELVING_OFFLOADING -> None in SHELVED_OFFLOADED. An
unshelve walks UNSHELVING (nova-api) -> POWERING_ON (back on its host) or
SPAWNING (on the host the scheduler chose) -> None in ACTIVE.
"""

SCHEDULING = "scheduling"
BLOCK_DEVICE_MAPPING = "block_device_mapping"
NETWORKING = "networking"
SPAWNING = "spawning"
DELETING = "deleting"

IMAGE_SNAPSHOT = "image_snapshot"
IMAGE_SNAPSHOT_PENDING = "image_snapshot_pending"
IMAGE_PENDING_UPLOAD = "image_pending_upload"
IMAGE_UPLOADING = "image_uploading"

POWERING_ON = "powering-on"

SHELVING = "shelving"
SHELVING_IMAGE_PENDING_UPLOAD = "shelving_image_pending_upload"
SHELVING_IMAGE_UPLOADING = "shelving_image_uploading"
SHELVING_OFFLOADING = "shelving_offloading"
UNSHELVING = "unshelving"

# Power actions (issue 12): nova-api sets the first, the host walks the rest to None.
POWERING_OFF = "powering-off"
REBOOTING = "rebooting"
REBOOT_PENDING = "reboot_pending"
REBOOT_STARTED = "reboot_started"
REBOOTING_HARD = "rebooting_hard"
REBOOT_PENDING_HARD = "reboot_pending_hard"
REBOOT_STARTED_HARD = "reboot_started_hard"
PAUSING = "pausing"
UNPAUSING = "unpausing"
SUSPENDING = "suspending"
RESUMING = "resuming"
# The task states a HARD reboot may interrupt (upstream's ALLOW_REBOOT).
ALLOW_REBOOT = [None, REBOOTING, REBOOT_PENDING, REBOOT_STARTED, REBOOTING_HARD,
                REBOOT_PENDING_HARD, REBOOT_STARTED_HARD, RESUMING, UNPAUSING, PAUSING,
                SUSPENDING]
