"""Ceph in small: a monitor, object storage daemons, librados, RBD images and rgw.

Every daemon is its own traced service (``ceph-mon``, ``ceph-osd`` per OSD host,
``ceph-rgw``). Daemons and clients talk over ``msgr``, a tiny framed TCP protocol
of novalab's own that stands for Ceph's messenger; rgw speaks Swift over HTTP.
``docs/ceph.md`` explains the cluster map, the placement rule and what is left
out (CephX, PG peering and recovery, scrubbing, more than one monitor).
"""
