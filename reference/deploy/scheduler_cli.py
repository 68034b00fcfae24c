"""``novalab scheduler filters``: what the scheduler of a deployment filters and weighs with.

    novalab scheduler filters [--state-dir DIR]

Reads the deployment's ``STATE_DIR/nova.conf`` as nova-scheduler does and lists
the enabled filters in the order they run, the available ones that are not
enabled (built-in and the learner's, from ``filter_dirs``), the weighers, and
what is wrong, if anything: then it exits 1 with the fault every boot would
end with. Like the scheduler, it imports the learner's filter files to find
their classes.
"""

from __future__ import annotations

import click


@click.group()
def scheduler():
    """The scheduler's filters and weighers ([filter_scheduler] in STATE_DIR/nova.conf)."""


@scheduler.command("filters")
@click.option("--state-dir", default=None, type=click.Path(file_okay=False),
              help="The deployment's state directory (default: the running or last "
                   "deployment novalab started).")
def filters(state_dir):
    """The available filters, which are enabled and in what order, and the weighers.

    Exits 1 when the scheduler cannot use this configuration, printing the fault
    every boot would end with until it is fixed.
    """
    # Imported here: `novalab` starts without loading the scheduler (and SQLAlchemy).
    from novalab.reference.common.exception import NovaLabException
    from novalab.reference.nova.scheduler import conf as scheduler_conf
    from novalab.reference.nova.scheduler import loadables
    from novalab.reference.nova.scheduler.host_manager import load_setup
    from novalab.tracing.store import NoTrace, locate

    try:
        state = locate(state_dir)
    except NoTrace as exc:
        raise click.ClickException(str(exc)) from exc
    path = scheduler_conf.conf_path(state.absolute())
    problems: list[str] = []
    try:
        conf = scheduler_conf.parse(path)
    except NovaLabException as exc:
        click.echo(f"nova.conf: {path}")
        _fail(exc)
    click.echo(f"nova.conf: {path}" + ("" if conf.exists else " (not there: the defaults)"))
    for option in conf.unknown_options:
        problems.append(f"[filter_scheduler] {option} is not an option nova-scheduler knows "
                        "(ignored)")
    for directory in conf.filter_dirs:
        click.echo(f"filter_dirs: {directory}")

    available = _available(conf, problems)
    by_name = {a.name: a for a in available}
    click.echo("enabled filters, in the order they run:")
    if not conf.enabled_filters:
        click.echo("  (none: every host passes)")
    for number, name in enumerate(conf.enabled_filters, 1):
        found = by_name.get(name)
        click.echo(f"  {number}. {name:<24} {found.source if found else 'NOT FOUND'}")
    others = [a for a in available if a.name not in conf.enabled_filters]
    if others:
        click.echo("available, not enabled:")
        for found in others:
            click.echo(f"     {found.name:<24} {found.source}")
    try:
        weighers = [cls.__name__ for cls in loadables.weigher_classes(conf.weight_classes)]
    except NovaLabException as exc:
        weighers = [f"? ({exc})"]
    click.echo(f"weighers: {', '.join(weighers) or '(none: the first host that passes)'}"
               f"   ram_weight_multiplier = {conf.ram_weight_multiplier}")
    try:
        load_setup(conf)  # what nova-scheduler itself would make of it
    except NovaLabException as exc:
        verdict = exc
    else:
        verdict = None
    for problem in problems:
        if problem != str(verdict):
            click.echo(f"warning: {problem}")
    if verdict is not None:
        _fail(verdict)


def _available(conf, problems: list[str]) -> list:
    """Every filter that loads; a file that does not is a problem, not the end."""
    from novalab.reference.common.exception import NovaLabException
    from novalab.reference.nova.scheduler import loadables

    try:
        return loadables.available_filters(conf.filter_dirs, conf.path)
    except NovaLabException:
        pass  # list what can be listed; load_setup names the error at the end
    found = [loadables.AvailableFilter(cls.__name__, cls, loadables.BUILT_IN)
             for cls in loadables.filters.all_filters()]
    try:
        files = loadables.filter_files(conf.filter_dirs, conf.path)
    except NovaLabException as exc:
        problems.append(str(exc))
        return found
    for path in files:
        try:
            found += [loadables.AvailableFilter(cls.__name__, cls, str(path))
                      for cls in loadables.load_filter_file(path)]
        except NovaLabException as exc:
            problems.append(str(exc))
    return found


def _fail(exc: Exception):
    click.echo(f"nova-scheduler cannot use this configuration; every boot ends in ERROR "
               f"with the fault:\n  {exc}")
    raise SystemExit(1)


def register(main: click.Group) -> None:
    main.add_command(scheduler)
