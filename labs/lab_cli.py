"""``novalab lab``: the course, run step by step and graded from what really happened.

    novalab lab list                  the course map: each lab, its steps of the 58, done or not
    novalab lab start NAME            bring up the lab cloud (or --cloud running) and prepare
    novalab lab step NAME [N]         the next step of the guide (--all: the whole guide)
    novalab lab hint NAME             one more hint
    novalab lab grade NAME            every check, one line each, pass or fail with why
    novalab lab answer NAME KEY VALUE answer a question the lab asks
    novalab lab solution NAME         the written solution
    novalab lab status                the cloud, the learner, where they are
    novalab lab reset NAME            finish, then start again
    novalab lab finish NAME           remove what the lab and the learner made
    novalab lab stop                  stop the lab cloud
    novalab lab env                   the OS_* variables of the lab cloud, for eval
    novalab lab dir NAME              your folder for a lab's files
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

from novalab.labs.client import LabService, ServiceError, artifacts
from novalab.labs.cloud import CloudError, LabClouds
from novalab.labs.course import LabNotFound, find, labs
from novalab.labs.progress import Progress
from novalab.reference.common.credentials import MissingCredentials
from novalab.tracing.cli import PLAIN

out = Console(**PLAIN)
err = Console(stderr=True, **PLAIN)

# The lab cloud answers fast when a vif-plugged event is lost (the failure drill's
# timeout) instead of after upstream's 300 s; a normal boot's event comes in well
# under a second (docs/decisions.md, "The labs").
LAB_CLOUD_ARGS: tuple[str, ...] = ("--vif-plugging-timeout", "10")


def _fail(message: str, code: int = 2):
    err.print(Text.assemble(("novalab lab:", "red"), f" {message}"))
    raise SystemExit(code)


def _lab(name: str):
    try:
        return find(name)
    except LabNotFound as exc:
        _fail(str(exc))


def _learner(cloud) -> tuple[str, str, str]:
    """(user, password, project) the learner works as: their OS_* variables if set for
    this cloud, else the cloud's `demo` user."""
    if os.environ.get("OS_USERNAME") and os.environ.get("OS_AUTH_URL", "").rstrip("/") == \
            cloud.auth_url.rstrip("/"):
        return (os.environ["OS_USERNAME"], os.environ.get("OS_PASSWORD", ""),
                os.environ.get("OS_PROJECT_NAME", os.environ["OS_USERNAME"]))
    return (cloud.os_env["OS_USERNAME"], cloud.os_env["OS_PASSWORD"],
            cloud.os_env["OS_PROJECT_NAME"])


def _user(clouds: LabClouds) -> str:
    """The learner's keystone user, with or without a running cloud."""
    try:
        return _learner(clouds.current())[0]
    except CloudError:
        return os.environ.get("OS_USERNAME") or "demo"


def _service(cloud) -> LabService:
    """The learner's session with the cloud's lab service, or a clear failure."""
    user, password, project = _learner(cloud)
    try:
        return LabService(cloud.auth_url, user, password, project)
    except ServiceError as exc:
        _fail(str(exc))


def _current_cloud(clouds: LabClouds):
    try:
        return clouds.current()
    except CloudError as exc:
        _fail(f"{exc}" + _died(clouds))


def _died(clouds: LabClouds) -> str:
    """What the lab cloud's log says about how it ended, if it did (for the failures that
    find no cloud)."""
    log = clouds.lab_dir / "serve.log"
    if not log.exists():
        return ""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(log.stat().st_mtime))
    tail = [line for line in log.read_text(errors="replace").splitlines() if line.strip()][-3:]
    return (f"\nthe lab cloud's log ({log}) last changed at {stamp} and ends with:\n  "
            + "\n  ".join(tail)) if tail else ""


def _workdir(clouds: LabClouds, lab) -> Path:
    return clouds.home / "work" / lab.name


_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def _markdown(text: str) -> None:
    """Prose as rich Markdown, fitted to the terminal; commands exactly as written.

    Rich wraps and pads a code block to the terminal's width, so a command longer than
    the terminal came out as two broken lines with spaces around them, which no shell
    runs when pasted. Code blocks are printed raw instead: one line per line, however
    narrow the terminal (the terminal itself folds what is too long, and copies it
    back whole).
    """
    at = 0
    for block in _FENCE.finditer(text):
        if text[at:block.start()].strip():
            out.print(Markdown(text[at:block.start()]))
            out.print()
        out.print(block.group(1).rstrip("\n"), soft_wrap=True)
        out.print()
        at = block.end()
    if text[at:].strip():
        out.print(Markdown(text[at:]))


@click.group("lab")
def lab_group():
    """The course: labs run step by step, graded from your own boot's trace."""


@lab_group.command("list")
def lab_list():
    """The course map: each lab, the steps of the 58-step flow it teaches, done or not."""
    clouds = LabClouds()
    user = _user(clouds)
    records = _attempts_by_lab(clouds)
    table = Table(title=f"the novalab course ({user})", title_justify="left",
                  box=None, header_style="bold")
    for column in ("lab", "title", "steps of the 58", "modern steps", "needs", "state"):
        table.add_column(column)
    for lab in labs():
        tried = records.get(lab.name, [])
        state = Text("done", "green") if any(a["passed_at"] for a in tried) else \
            "started" if any(not a["finished_at"] for a in tried) else "-"
        table.add_row(lab.number, lab.title, lab.step_groups, lab.modern_groups,
                      lab.needs_text, state)
    out.print(table)


def _attempt_values(clouds: LabClouds, lab) -> dict:
    """What the learner's attempt at ``lab`` drew (names and texts use them); none when
    no attempt is in progress or no cloud answers (the texts then show ``{key}``)."""
    if not lab.parameters:
        return {}
    try:
        cloud = clouds.current()
        service = LabService(cloud.auth_url, *_learner(cloud))
        attempt = service.current(lab.name)
        service.close()
    except (CloudError, ServiceError):
        return {}
    return dict(attempt["parameters"]) if attempt else {}


def _attempts_by_lab(clouds: LabClouds) -> dict[str, list[dict]]:
    """The learner's attempts (newest first) by lab, from the running cloud's lab service;
    none when no cloud runs (the record is the cloud's)."""
    try:
        cloud = clouds.current()
    except CloudError:
        return {}
    try:
        service = LabService(cloud.auth_url, *_learner(cloud))
        found = service.attempts()["attempts"]
        service.close()
    except ServiceError:
        return {}
    by_lab: dict[str, list[dict]] = {}
    for attempt in found:
        by_lab.setdefault(attempt["lab"], []).append(attempt)
    return by_lab


@lab_group.command("start")
@click.argument("name")
@click.option("--cloud", "cloud_kind", type=click.Choice(["lab", "running", "shared"]),
              default="lab", show_default=True,
              help="'lab': the lab cloud (an embedded cloud in the background, started if "
                   "needed); 'running': a `novalab up` or `serve` cloud that already runs; "
                   "'shared': the class's cloud, reached with your own OS_* variables.")
@click.option("--state-dir", default=None, type=click.Path(file_okay=False),
              help="With --cloud running: that deployment's state dir (default: found).")
def lab_start(name, cloud_kind, state_dir):
    """Prepare a lab: its cloud, its state, its folder. Safe to run again."""
    lab = _lab(name)
    clouds = LabClouds()
    if "running" in lab.needs and cloud_kind != "running":
        _fail(f"{lab.name} needs separate service processes over RabbitMQ: start them with "
              "`novalab up` (RabbitMQ and PostgreSQL on loopback; `rabbitmq-server -detached` "
              f"starts RabbitMQ), then `novalab lab start {lab.name} --cloud running`")
    if lab.operates and cloud_kind == "shared":
        _fail(f"{lab.name} operates the cloud ({lab.operates}), and a class's shared cloud "
              f"is not yours to operate: do it on a lab cloud of your own, `novalab lab "
              f"start {lab.number}` on a machine where no other lab cloud runs "
              "(docs/labs/README.md, \"Labs on a class's cloud\")")
    started = time.monotonic()
    if cloud_kind == "lab":
        _reshape(lab, clouds)
    try:
        with err.status("Starting the lab cloud..." if cloud_kind == "lab" else
                        "Finding the running cloud..."):
            cloud = clouds.start(LAB_CLOUD_ARGS, computes=lab.computes) \
                if cloud_kind == "lab" else clouds.use_running(state_dir) \
                if cloud_kind == "running" else clouds.use_shared()
    except CloudError as exc:
        _fail(str(exc))
    if cloud_kind == "running":
        _check_running_shape(lab, cloud)
    user = _learner(cloud)[0]
    workdir = _workdir(clouds, lab)
    workdir.mkdir(parents=True, exist_ok=True)
    service = _service(cloud)
    try:
        with err.status(f"Preparing {lab.name}..."):
            attempt = service.start(lab.name, workdir, _operator_token(lab, cloud, service))
    except ServiceError as exc:
        _fail(str(exc))
    names = lab.rendered_names(user, attempt["parameters"])
    _markdown(f"# {lab.number} {lab.title}\n\n{lab.summary}\n\n"
              f"**Steps of the 58-step flow:** {lab.step_groups}"
              + (f"; **of today's boot (modern):** {lab.modern_groups}" if lab.modern_steps
                 else ""))
    if names:
        out.print(Text.assemble("names to use: ", Text(", ").join(
            Text.assemble(f"{k} ", (v, "bold")) for k, v in names.items())))
    out.print(f"cloud: {cloud.kind} ({cloud.state_dir or cloud.auth_url}), user {user}; "
              f"your folder: {workdir}")
    if cloud.web:
        out.print(f"trace page: {cloud.web}")
    out.print(f'ready in {time.monotonic() - started:.1f} s. For the openstack CLI: '
              f'eval "$(novalab lab env)"; then: novalab lab step {lab.number}')


def _reshape(lab, clouds: LabClouds) -> None:
    """Stop a lab cloud that runs in another shape than ``lab`` needs (another number of
    compute hosts, other LAB_CLOUD_ARGS), so that `start` brings up the right one; refuse
    while other labs are in progress on it (their servers are in that cloud)."""
    running = clouds.running_lab_cloud()
    wanted = clouds.lab_dir_for(lab.computes)
    if running is None or (running[0] == wanted and running[1] == LAB_CLOUD_ARGS):
        return
    busy = sorted(name for name, tried in _attempts_by_lab(clouds).items()
                  if name != lab.name and any(not a["finished_at"] for a in tried))
    hosts = f"{lab.computes} compute host" + ("s" if lab.computes > 1 else "")
    if busy:
        _fail(f"{lab.name} runs on a lab cloud of {hosts}, and the lab cloud now runs in "
              f"another shape for the labs in progress: {', '.join(busy)}. Finish them "
              "first (`novalab lab finish NAME --keep-cloud`; what you passed stays passed), "
              f"then `novalab lab start {lab.name}` again")
    with err.status(f"Stopping the lab cloud: {lab.name} runs on one of {hosts}..."):
        clouds.stop()


def _operator_token(lab, cloud, service: LabService) -> str | None:
    """For a lab that operates the cloud, an admin token of it: the cloud's owner reads
    the admin's password in its state dir; a learner of a shared cloud has none (the
    lab service then says so)."""
    if not lab.operates or cloud.state_dir is None:
        return None
    try:
        password = cloud.credentials.admin
    except (OSError, MissingCredentials) as exc:
        _fail(f"{lab.name} operates the cloud ({lab.operates}), which needs its admin: "
              f"{exc}")
    return service.operator_token(cloud.auth_url, password)


def _check_running_shape(lab, cloud) -> None:
    """A running `novalab up` cloud says how many compute hosts it has (state.json)."""
    import json

    try:
        computes = json.loads((cloud.state_dir / "state.json").read_text()).get("computes")
    except (OSError, ValueError):
        return
    if isinstance(computes, int) and computes < lab.computes:
        _fail(f"{lab.name} needs {lab.computes} compute hosts and {cloud.state_dir} runs "
              f"{computes}: start it with `novalab up --computes {lab.computes}`")


@lab_group.command("env")
def lab_env():
    """Print the OS_* variables of the labs' cloud: eval "$(novalab lab env)"."""
    clouds = LabClouds()
    try:
        cloud = clouds.current()
    except CloudError as exc:
        _fail(str(exc))
    if cloud.kind == "shared":
        click.echo("# the shared cloud: your own OS_* variables are already the ones to use")
        return
    for key, value in cloud.os_env.items():
        click.echo(f"export {key}={value}")
    click.echo(f"export NOVALAB_STATE_DIR={cloud.state_dir}")
    if cloud.transport_url:  # what `novalab queues` reads
        click.echo(f"export NOVALAB_TRANSPORT_URL={shlex.quote(cloud.transport_url)}")


@lab_group.command("dir")
@click.argument("name")
def lab_dir(name):
    """Print your folder for a lab (where it asks you to write files): cd "$(novalab lab dir
    NAME)"."""
    lab = _lab(name)
    folder = LabClouds().home / "work" / lab.name
    folder.mkdir(parents=True, exist_ok=True)
    click.echo(str(folder))


@lab_group.command("step")
@click.argument("name")
@click.argument("number", required=False, type=int)
@click.option("--all", "everything", is_flag=True, help="The whole guide.")
def lab_step(name, number, everything):
    """Show the next step of the guide (or step N)."""
    lab = _lab(name)
    clouds = LabClouds()
    user = _user(clouds)
    values = _attempt_values(clouds, lab)
    if everything:
        _markdown(lab.render(lab.guide, user, values))
        return
    steps = lab.guide_steps
    progress = Progress(clouds.home, user)
    current = progress.lab(lab.name).get("step", 0)
    wanted = number if number is not None else min(current + 1, len(steps))
    chosen = next((s for s in steps if s.number == wanted), None)
    if chosen is None:
        _fail(f"{lab.name} has steps 1-{len(steps)}")
    progress.update(lab.name, step=max(current, chosen.number))
    _markdown(lab.render(f"## Step {chosen.number} of {len(steps)}: {chosen.title}\n\n"
                         f"{chosen.body}", user, values))
    if chosen.number < len(steps):
        out.print(f"next: novalab lab step {lab.number}")
    else:
        out.print(f"last step. Check your work: novalab lab grade {lab.number}")


@lab_group.command("hint")
@click.argument("name")
def lab_hint(name):
    """One more hint (each call shows the next)."""
    lab = _lab(name)
    clouds = LabClouds()
    user = _user(clouds)
    progress = Progress(clouds.home, user)
    if not lab.hints:
        _fail(f"{lab.name} has no hints")
    seen = progress.lab(lab.name).get("hints", 0)
    shown = min(seen, len(lab.hints) - 1)
    progress.update(lab.name, hints=shown + 1)
    _markdown(lab.render(lab.hints[shown], user, _attempt_values(clouds, lab)))
    out.print(f"hint {shown + 1} of {len(lab.hints)}")


@lab_group.command("grade")
@click.argument("name")
@click.option("--watch", is_flag=True, help="Grade again every few seconds until all pass.")
@click.option("--interval", default=3.0, show_default=True, help="Seconds between grades.")
def lab_grade(name, watch, interval):
    """Run every check of the lab: one line each, pass or fail with why. Exit 0 when all
    pass."""
    lab = _lab(name)
    clouds = LabClouds()
    cloud = _current_cloud(clouds)
    user = _learner(cloud)[0]
    service = _service(cloud)
    try:
        operator = _operator_token(lab, cloud, service)
    except ServiceError as exc:
        _fail(str(exc))
    while True:
        try:
            files = artifacts(lab, user, _workdir(clouds, lab))
            result = service.grade(lab.name, files, operator)
        except ServiceError as exc:
            _fail(str(exc))
        checks = result["checks"]
        for check in checks:
            mark = Text("SKIP", "yellow") if check["skipped"] else \
                Text("PASS", "green") if check["passed"] else Text("FAIL", "red")
            # soft_wrap: one line per check and one per reason, however narrow the
            # terminal (or a pipe): graders and scripts read them line by line. The
            # texts print as written: a reason may quote `[call METHOD]` or a list.
            out.print(Text.assemble(mark, f"  {check['check']}",
                                    f"\n      {check['why']}" if check["why"] else ""),
                      soft_wrap=True)
        passed = result["passed"]
        out.print(f"{sum(c['passed'] for c in checks)}/{len(checks)} checks pass"
                  + (f": {lab.name} done" if passed else ""))
        if passed or not watch:
            sys.exit(0 if passed else 1)
        time.sleep(interval)


@lab_group.command("answer")
@click.argument("name")
@click.argument("key")
@click.argument("value", nargs=-1, required=True)
def lab_answer(name, key, value):
    """Answer one of the lab's questions (graded by `lab grade`)."""
    lab = _lab(name)
    if key not in lab.questions:
        _fail(f"{lab.name} asks no question {key!r}; its questions: "
              + (", ".join(f"{k} ({q})" for k, q in lab.questions.items()) or "none"))
    clouds = LabClouds()
    service = _service(_current_cloud(clouds))
    try:
        service.answer(lab.name, key, " ".join(value))
    except ServiceError as exc:
        _fail(str(exc))
    out.print(f"{key}: {' '.join(value)} (recorded; `novalab lab grade "
              f"{lab.number}` checks it)")


@lab_group.command("solution")
@click.argument("name")
def lab_solution(name):
    """The written solution of the lab."""
    lab = _lab(name)
    clouds = LabClouds()
    _markdown(lab.render(lab.solution, _user(clouds), _attempt_values(clouds, lab)))


@lab_group.command("status")
def lab_status():
    """The labs' cloud, the learner, and each lab in progress."""
    clouds = LabClouds()
    try:
        cloud = clouds.current()
    except CloudError as exc:
        out.print(f"cloud: none ({exc}){_died(clouds)}")
        return
    user = _learner(cloud)[0]
    out.print(f"cloud: {cloud.kind} at {cloud.state_dir or 'a shared cloud'} (keystone "
              f"{cloud.auth_url})")
    if cloud.web:
        out.print(f"trace page: {cloud.web}")
    out.print(f"learner: {user} (attempts and grades are kept by the cloud's lab "
              "service)")
    for lab_name, tried in sorted(_attempts_by_lab(clouds).items()):
        attempt = tried[0]
        lab = find(lab_name)
        last = attempt["last_grade"]
        state = "done" if attempt["passed_at"] else "finished" if attempt["finished_at"] else \
            "in progress"
        step = Progress(clouds.home, user).lab(lab.name).get("step", 0)
        out.print(f"  {lab.name}: {state}, step {step} of {len(lab.guide_steps)}"
                  + (f", last grade {last['checks_passed']}/{last['checks']}" if last else "")
                  + (f", {len(tried)} attempts" if len(tried) > 1 else ""))


def _finish(lab, clouds: LabClouds, cloud) -> dict:
    """Have the lab service remove what the learner made for ``lab`` and end the attempt;
    then the learner's own lab folder goes. Returns the service's answer."""
    service = _service(cloud)
    try:
        done = service.finish(lab.name)
    except ServiceError as exc:
        if exc.status != 404:  # 404: no attempt in progress, nothing to remove there
            _fail(str(exc))
        done = {"removed": {}, "in_progress": service.attempts()["in_progress"]}
    workdir = _workdir(clouds, lab)
    if workdir.exists():
        import shutil

        shutil.rmtree(workdir)
    Progress(clouds.home, _learner(cloud)[0]).forget(lab.name)
    return done


@lab_group.command("finish")
@click.argument("name")
@click.option("--keep-cloud", is_flag=True, help="Leave the lab cloud running.")
def lab_finish(name, keep_cloud):
    """Remove what the lab and you made (servers, ports, volumes, images, fault knobs,
    your lab folder); stop the lab cloud when no other lab is in progress."""
    lab = _lab(name)
    clouds = LabClouds()
    cloud = _current_cloud(clouds)
    with err.status(f"Removing what {lab.name} made..."):
        done = _finish(lab, clouds, cloud)
    removed = done["removed"]
    out.print("removed: " + ("; ".join(f"{kind}: {', '.join(names)}"
                                       for kind, names in removed.items()) or "nothing"))
    if cloud.kind == "lab" and not done["in_progress"] and not keep_cloud:
        clouds.stop()
        out.print("the lab cloud is stopped (`novalab lab start` brings it back)")
    elif cloud.kind == "lab" and done["in_progress"] and not keep_cloud:
        out.print(f"the lab cloud keeps running: {done['in_progress']} attempt(s) at labs "
                  "are in progress on it (`novalab lab stop` stops it anyway)")


@lab_group.command("reset")
@click.argument("name")
@click.pass_context
def lab_reset(click_ctx, name):
    """Back to the lab's start: finish it, forget your progress in it, start again."""
    lab = _lab(name)
    clouds = LabClouds()
    cloud = None
    try:
        cloud = clouds.current()
    except CloudError:
        pass
    if cloud is not None:
        _finish(lab, clouds, cloud)
    click_ctx.invoke(lab_start, name=name, cloud_kind=cloud.kind if cloud else "lab",
                     state_dir=None)


@lab_group.command("stop")
def lab_stop():
    """Stop the lab cloud (your progress is kept)."""
    if LabClouds().stop():
        out.print("the lab cloud is stopped")
    else:
        out.print("the lab cloud was not running")


@lab_group.command("docs")
@click.option("-o", "--output", default="docs/labs", show_default=True,
              type=click.Path(file_okay=False), help="Folder to write the pages to.")
def lab_docs(output):
    """Publish the course as Markdown pages (what docs/labs/ holds)."""
    from novalab.labs.publish import write_pages

    for path in write_pages(Path(output)):
        err.print(f"wrote {path}")


def register(main: click.Group) -> None:
    main.add_command(lab_group)
