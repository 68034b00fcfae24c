"""Error codes placement puts in its error bodies (``placement/errors.py``).

From microversion 1.23 each error in ``{"errors": [...]}`` carries a ``code``
that tells apart errors sharing an HTTP status: a 409 for a stale generation
(``placement.concurrent_update``, read again and retry) is not a 409 for a
duplicate name. An error with no code of its own says ``placement.undefined_code``.
"""

DEFAULT = "placement.undefined_code"
INVENTORY_INUSE = "placement.inventory.inuse"
CONCURRENT_UPDATE = "placement.concurrent_update"
DUPLICATE_NAME = "placement.duplicate_name"
PROVIDER_IN_USE = "placement.resource_provider.inuse"
PROVIDER_CANNOT_DELETE_PARENT = "placement.resource_provider.cannot_delete_parent"
QUERYPARAM_BAD_VALUE = "placement.query.bad_value"
