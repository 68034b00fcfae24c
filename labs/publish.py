"""The course as Markdown pages: ``docs/labs/`` is written from the labs themselves.

``novalab lab docs`` writes one page per lab (what it teaches, the names to
use, the guide, the questions, the written solution) and an index with the
course map; a test keeps the committed pages equal to what this writes, so
the published course never drifts from the one `novalab lab` runs.
"""

from __future__ import annotations

from pathlib import Path

from novalab.diagrams.flows import get_flow
from novalab.labs.course import Lab, labs, ranges


def _objectives(lab: Lab, flow_name: str = "classic") -> str:
    flow = get_flow(flow_name)
    numbers = lab.steps if flow_name == "classic" else lab.modern_steps
    lines = [f"| {n} | {flow.step(n).request} | {flow.step(n).text} |" for n in numbers]
    return "| step | request | description |\n|---|---|---|\n" + "\n".join(lines)


def page(lab: Lab) -> str:
    """One lab's page."""
    parts = [f"# Lab {lab.number}: {lab.title}", "", lab.summary, "",
             f"Start it with `novalab lab start {lab.name}`"
             + (" --cloud running" if "running" in lab.needs else "")
             + f"; check your work with `novalab lab grade {lab.name}`."
             + (f" The lab cloud runs {lab.computes} compute hosts for it." if lab.computes > 1
                else "")
             + (f" It operates the cloud ({lab.operates}): do it on a cloud you run yourself, "
                "not on a class's shared cloud." if lab.operates else ""), "",
             f"## Objectives: steps {lab.step_groups} of the 58-step flow", "",
             _objectives(lab), ""]
    if lab.modern_steps:
        parts += [f"## Objectives: steps {lab.modern_groups} of today's boot (the modern flow)",
                  "", _objectives(lab, "modern"), ""]
    if lab.names:
        parts += ["## Names to use", "", "`{user}` is your keystone user "
                  "(`demo` on the lab cloud).", ""]
        parts += [f"- {key}: `{value}`" for key, value in lab.names.items()] + [""]
    parts += [lab.render(lab.guide).strip(), ""]
    if lab.questions:
        parts += ["## Questions", "", "Answer with `novalab lab answer "
                  f"{lab.name} KEY VALUE`.", ""]
        parts += [f"- `{key}`: {question}" for key, question in lab.questions.items()] + [""]
    parts += ["## Solution", "", "<details><summary>The written solution (try first)"
              "</summary>", "", lab.render(lab.solution).strip(), "", "</details>", ""]
    return "\n".join(parts)


def index(course: list[Lab]) -> str:
    rows = [f"| [{lab.number}]({lab.name}.md) | {lab.title} | {lab.step_groups} | "
            f"{lab.modern_groups} | {lab.needs_text} |" for lab in course]
    taught = ranges({n for lab in course for n in lab.steps})
    modern = ranges({n for lab in course for n in lab.modern_steps})
    return "\n".join([
        "# The novalab course", "",
        "Each lab walks one part of the classic 58-step boot and is graded from what "
        "really happened: the cloud's state, your own boot's trace, the files you wrote.",
        "", "```sh", "novalab lab list            # the course map", "novalab lab start 00"
        "          # then: novalab lab step 00, novalab lab grade 00", "```", "",
        "| lab | title | steps of the 58 | modern steps | needs |", "|---|---|---|---|---|",
        *rows, "",
        f"Steps taught across the course: {taught}; of today's boot (the modern flow, "
        f"`novalab flow compare` lines it up with the 58): {modern}.", "",
        "## Labs on a class's cloud", "",
        "A class's shared cloud (`novalab lab start NN --cloud shared`) runs every lab "
        "whose needs do not say *a cloud of your own*. The others operate the cloud: they "
        "read its files or change its configuration, which only whoever runs it may do, "
        "and the lab service starts them only with the cloud's admin beside the learner. "
        "Do those on a lab cloud of your own (`novalab lab start NN`, which runs as you; "
        "one lab cloud per machine, as it takes the standard ports) or on your own "
        "`novalab up`.", "",
        "These pages are written by `novalab lab docs` from `labs/NN-name/`.", ""])


def write_pages(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    course = labs()
    written = []
    for lab in course:
        path = folder / f"{lab.name}.md"
        path.write_text(page(lab), encoding="utf-8")
        written.append(path)
    path = folder / "README.md"
    path.write_text(index(course), encoding="utf-8")
    return [*written, path]
