"""The networks a cloud starts with: each ordinary project's own (issue 21, finding 13)."""

from __future__ import annotations

from novalab.reference.deploy.boot import BootRequest, boot


def test_one_project_exhausting_addresses_cannot_fail_anothers_boot(cloud, login):
    """alt_demo takes every address of every network it can put ports on (eight a
    port, then one); demo's boot still gets an address. On a shared ``private``
    alt_demo took demo's: its port quota (500) is larger than the /24."""
    alt = login(cloud, "alt_demo")
    neutron = f"{alt.client.endpoint('network')}/v2.0"
    networks = alt.request("GET", f"{neutron}/networks").json()["networks"]
    assert networks, "alt_demo has a network of its own to boot on"
    for network in networks:
        for per_port in (8, 1):
            addresses = [{"subnet_id": network["subnets"][0]}] * per_port
            while (made := alt.request("POST", f"{neutron}/ports", json={"port": {
                    "network_id": network["id"], "fixed_ips": addresses}})).status_code == 201:
                pass
            assert made.json()["NeutronError"]["type"] == "IpAddressGenerationFailure", \
                made.text

    result = boot(cloud, BootRequest(name="after-exhaustion", volume_size=None))

    assert result.active, result.server.get("fault")
    assert result.server["addresses"]["private"][0]["addr"].startswith("10.0.0.")
