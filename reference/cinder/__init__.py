"""Cinder in small: block storage volumes on the Ceph-like store, attached over rbd.

``cinder-api`` (Flask, keystone auth) keeps the volume records and casts work to
``cinder-volume`` over RPC; ``cinder-volume`` runs the RBD driver, which makes
one RBD image per volume in the ``volumes`` pool and tells Nova how to reach it
(``connection_info``). The scheduler is folded away: creates go to the shared
``cinder-volume`` queue and the backend that takes one owns the volume
(``docs/cinder.md`` says why and what else is left out).
"""
