"""JSON schemas of the compute API, one module per resource, as upstream's
``nova/api/openstack/compute/schemas`` (``servers``, ``shelve``,
``server_external_events``, ``quota_sets``).

Each body schema is checked before its controller runs (``@validation.schema``,
``reference/common/validation.py``); a body that breaks a rule is a 400 naming
the field. Every string, list and number is bounded: a count of 10**30 or a
1 MB name never reaches a controller. The pieces several schemas share are in
``parameter_types``, named after ``nova/api/validation/parameter_types.py``.
"""
