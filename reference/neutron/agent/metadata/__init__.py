"""neutron's metadata agent: the proxy between a guest and nova-api-metadata (:mod:`.proxy`).

The secret it signs with, and the address each guest stand-in sends from, are the
deployment's (``reference/common/metadata_secret.py``): nova-api-metadata and the
guests need them too, and no project imports another's internals.
"""
