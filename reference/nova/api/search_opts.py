"""``GET /servers`` filters (``ServersController._get_servers``), as one predicate.

A member may filter by ``reservation_id``, ``name``, ``status``, ``image``,
``flavor``, ``ip``, ``ip6`` (2.5) and ``changes-since``, and from 2.26 by tags
(``tags``, ``tags-any``, ``not-tags``, ``not-tags-any``); anything else a member
sends is dropped without a word, as upstream's ``remove_invalid_options`` does
(admins also get ``host``). ``name``, ``ip`` and ``ip6`` are regular expressions
matched as ``name_filter`` does (no backtracking). ``status`` may repeat; an
unknown one lists nothing below 2.38 and is a 400 from 2.38; ``DELETED`` is for
admins (a 403 for members), and novalab lists no deleted servers. A ``flavor``
that does not exist lists nothing, as upstream.

    openstack server list --status ACTIVE --flavor m1.nano --image cirros --name web
    openstack server list --tags a,b --not-tags c        (2.26)
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from novalab.reference.common import exception
from novalab.reference.nova.api import name_filter, versions, views

MEMBER_OPTIONS = ("reservation_id", "name", "status", "image", "flavor", "ip",
                  "changes-since", "all_tenants")
MEMBER_OPTIONS_2_5 = ("ip6",)
MEMBER_OPTIONS_2_26 = ("tags", "tags-any", "not-tags", "not-tags-any")
ADMIN_OPTIONS = ("host",)

NOTHING = object()  # the filters match no server at all
# Every status upstream's _STATE_MAP shows (api/openstack/common.py): a status
# filter naming none of them is unknown.
KNOWN_STATUSES = frozenset((
    "ACTIVE", "BUILD", "CONFIRMING_RESIZE", "DELETED", "ERROR", "HARD_REBOOT", "MIGRATING",
    "PASSWORD", "PAUSED", "REBOOT", "REBUILD", "RESCUE", "RESIZE", "REVERT_RESIZE", "SHELVED",
    "SHELVED_OFFLOADED", "SHUTOFF", "SOFT_DELETED", "SUSPENDED", "VERIFY_RESIZE"))


def allowed_options(is_admin: bool) -> set[str]:
    """``_get_server_search_options``: what the caller's filters may name."""
    allowed = set(MEMBER_OPTIONS)
    if versions.is_supported("2.5"):
        allowed.update(MEMBER_OPTIONS_2_5)
    if versions.is_supported("2.26"):
        allowed.update(MEMBER_OPTIONS_2_26)
    if is_admin:
        allowed.update(ADMIN_OPTIONS)
    return allowed


def _regex(value: str) -> Callable[[str], bool]:
    try:
        return name_filter.compile_filter(value)
    except name_filter.UnsupportedPattern as exc:
        raise exception.ValidationError(detail=str(exc)) from exc


def _statuses(values: list[str], is_admin: bool):
    """``task_and_vm_state_from_status``: the statuses asked for, known ones only."""
    wanted = {value.upper() for value in values} & KNOWN_STATUSES
    if not wanted:
        if versions.is_supported("2.38"):
            raise exception.ValidationError(detail="Invalid status value")
        return NOTHING
    if wanted == {"DELETED"}:
        if not is_admin:
            raise exception.Forbidden("Only administrators may list deleted instances")
        return NOTHING  # novalab lists no deleted servers
    return wanted


def _tag_list(value: str) -> set[str]:
    return {tag.strip() for tag in value.split(",") if tag.strip()}


def build(query, is_admin: bool, flavor_exists: Callable[[str], bool], addresses):
    """One predicate on an instance for the filters in ``query`` (a MultiDict), ``None``
    when there are none, or :data:`NOTHING`. ``addresses(instance)`` lists a server's
    fixed IPs (read only when an ``ip`` filter asks)."""
    allowed = allowed_options(is_admin)
    given = {key: query.getlist(key) for key in query if key in allowed}
    checks: list[Callable[[dict], bool]] = []
    if "name" in given:
        match = _regex(given["name"][0])
        checks.append(lambda i: match(i.get("display_name") or ""))
    if "reservation_id" in given:
        reservation = given["reservation_id"][0]
        checks.append(lambda i: i.get("reservation_id") == reservation)
    if "status" in given:
        wanted = _statuses(given["status"], is_admin)
        if wanted is NOTHING:
            return NOTHING
        checks.append(lambda i: views.status_from_state(i["vm_state"], i.get("task_state"))
                      in wanted)
    if "image" in given:
        image = given["image"][0].rstrip("/").rsplit("/", 1)[-1]
        checks.append(lambda i: (i.get("image_ref") or "") == image)
    if "flavor" in given:
        flavor = given["flavor"][0].rstrip("/").rsplit("/", 1)[-1]
        if not flavor_exists(flavor):
            return NOTHING   # upstream: FlavorNotFound -> an empty list
        checks.append(lambda i: str(i.get("flavor_id")) == flavor)
    for key, version in (("ip", 4), ("ip6", 6)):
        if key in given:
            match = _regex(given[key][0])
            checks.append(lambda i, m=match, v=version: any(
                m(address) for address in addresses(i, v)))
    if "changes-since" in given:
        since = _timestamp(given["changes-since"][0])
        checks.append(lambda i: _aware(i.get("updated_at") or i.get("created_at")) >= since)
    if "host" in given:
        host = given["host"][0]
        checks.append(lambda i: i.get("host") == host)
    for key, combine, negate in (("tags", all, False), ("tags-any", any, False),
                                 ("not-tags", all, True), ("not-tags-any", any, True)):
        if key in given:
            tags = _tag_list(given[key][0])
            checks.append(lambda i, t=tags, c=combine, n=negate:
                          c(tag in (i.get("tags") or []) for tag in t) != n)
    if not checks:
        return None
    return lambda instance: all(check(instance) for check in checks)


def _aware(value) -> datetime:
    if value is None:
        return datetime.min.replace(tzinfo=UTC)
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _timestamp(value: str) -> datetime:
    try:
        return _aware(value)
    except ValueError as exc:
        raise exception.ValidationError(
            detail=f"Invalid input for query parameters changes-since. Value: {value}. "
                   f"'{value}' is not a 'date-time'") from exc
