"""ImagePropertiesFilter: the image's architecture, hypervisor type and VM mode must
be among what the host supports (``supported_instances``, read from libvirt's
capabilities). An image that names none of them fits anywhere.
"""

from novalab.reference.nova.scheduler.filters import BaseHostFilter


class ImagePropertiesFilter(BaseHostFilter):
    def host_passes(self, host_state, spec_obj) -> bool:
        props = (spec_obj.get("image") or {}).get("properties") or {}
        wanted = (props.get("hw_architecture"), props.get("img_hv_type"),
                  props.get("hw_vm_mode"))
        if not any(wanted):
            return True
        for supported in host_state.supported_instances:
            if all(w is None or w == s for w, s in zip(wanted, supported, strict=False)):
                return True
        return False
