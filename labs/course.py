"""The course: the labs in ``labs/NN-name/`` and what each one teaches.

A lab is a folder of data and two small Python files; the runner knows no lab::

    labs/04-scheduling/
      lab.toml       title, the 58-step numbers it teaches (modern_steps: those of
                     today's boot, the modern table, if any), what it needs, the names
                     the learner uses ({user} is the learner's keystone user), questions,
                     the artifacts (files of the lab folder its checks read), and
                     [cloud] computes = N when the lab cloud needs N compute hosts,
                     [cloud] operates = "why" when the learner must run the cloud
      guide.md       the guide: "## Step N: title" sections, guided then graded
      hints.md       "## Hint" sections, shown one more at a time by `lab hint`
      solution.md    the written solution; its ```sh blocks are what the tests run
      grade.py       the checks, each judging the cloud's state, the learner's own
                     trace or a file the learner wrote (never the commands typed)
      prepare.py     optional: start(ctx) and finish(ctx) beyond the defaults

Folder names are not Python identifiers on purpose: a lab is loaded by path
(``grade.py`` with importlib), never imported as a package.
"""

from __future__ import annotations

import importlib.util
import random
import re
import secrets
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType

COURSE_DIR = Path(__file__).parent
_FOLDER = re.compile(r"^(\d\d)-([a-z0-9-]+)$")
_STEP = re.compile(r"^## Step (\d+): (.+)$", re.M)
_HINT = re.compile(r"^## ", re.M)
STEPS_IN_FLOW = 58


class LabNotFound(LookupError):
    """No lab by that name; the message lists the course."""


@dataclass(frozen=True)
class GuideStep:
    number: int
    title: str
    body: str  # Markdown, without the heading


@dataclass(frozen=True)
class Lab:
    folder: Path
    number: str                 # "04"
    name: str                   # "04-scheduling"
    title: str
    summary: str
    steps: tuple[int, ...]      # the 58-step numbers this lab teaches
    needs: tuple[str, ...] = ()  # "rabbitmq", "running" (a `novalab up` cloud)
    names: dict[str, str] = field(default_factory=dict)
    questions: dict[str, str] = field(default_factory=dict)
    faults: tuple[str, ...] = ()  # fault knobs the lab injects (cleared by finish)
    computes: int = 1           # [cloud] computes: compute hosts the lab cloud runs for it
    # [cloud] operates: why the lab needs the cloud's operator (it reads the cloud's files
    # or changes its configuration), "" when any learner may do it on a shared cloud.
    operates: str = ""
    modern_steps: tuple[int, ...] = ()  # steps of the modern table (today's boot) it teaches
    # The files of the learner's lab folder its checks read (glob patterns, names such
    # as {filter_file} allowed): what `lab grade` sends the lab service.
    artifacts: tuple[str, ...] = ()
    # What each attempt draws for its learner ([parameters] in lab.toml): {key: spec},
    # a spec being {choice = [...]}, {range = [low, high]} or {token = N} (N random hex
    # digits). Names and texts use them as {key}; checks read ctx.parameters.
    parameters: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def load(cls, folder: Path) -> Lab:
        found = _FOLDER.match(folder.name)
        if not found:
            raise ValueError(f"{folder}: a lab folder is named NN-name")
        meta = tomllib.loads((folder / "lab.toml").read_text(encoding="utf-8"))
        return cls(folder=folder, number=found.group(1), name=folder.name,
                   title=meta["title"], summary=meta.get("summary", ""),
                   steps=tuple(meta.get("steps", ())), needs=tuple(meta.get("needs", ())),
                   names=dict(meta.get("names", {})), questions=dict(meta.get("questions", {})),
                   faults=tuple(meta.get("faults", ())),
                   computes=int(meta.get("cloud", {}).get("computes", 1)),
                   operates=str(meta.get("cloud", {}).get("operates", "")).strip(),
                   modern_steps=tuple(meta.get("modern_steps", ())),
                   artifacts=tuple(meta.get("artifacts", ())),
                   parameters=_parameter_specs(folder, meta.get("parameters", {})))

    # The texts --------------------------------------------------------------------------

    def _text(self, name: str) -> str:
        path = self.folder / name
        return path.read_text(encoding="utf-8") if path.exists() else ""

    @property
    def guide(self) -> str:
        return self._text("guide.md")

    @property
    def solution(self) -> str:
        return self._text("solution.md")

    @cached_property
    def guide_steps(self) -> tuple[GuideStep, ...]:
        """The guide's ``## Step N: title`` sections, in order."""
        text = self.guide
        marks = list(_STEP.finditer(text))
        steps = []
        for index, mark in enumerate(marks):
            end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
            steps.append(GuideStep(int(mark.group(1)), mark.group(2).strip(),
                                   text[mark.end():end].strip()))
        return tuple(steps)

    @cached_property
    def hints(self) -> tuple[str, ...]:
        """The hints, in the order a stuck learner should read them."""
        parts = _HINT.split(self._text("hints.md"))
        return tuple("## " + part.strip() for part in parts[1:] if part.strip())

    def solution_scripts(self, user: str, values: dict | None = None) -> list[str]:
        """The ``sh`` blocks of the written solution for ``user`` (and the attempt's
        drawn ``values``), in order (what the tests run)."""
        return re.findall(r"^```sh\n(.*?)^```", self.render(self.solution, user, values),
                          re.M | re.S)

    def draw(self, rng: random.Random | None = None) -> dict:
        """One attempt's values of the lab's parameters, drawn at random."""
        rng = rng or secrets.SystemRandom()
        drawn = {}
        for key, spec in self.parameters.items():
            if "choice" in spec:
                drawn[key] = rng.choice(list(spec["choice"]))
            elif "range" in spec:
                drawn[key] = rng.randint(*spec["range"])
            else:
                drawn[key] = "".join(rng.choice("0123456789abcdef") for _ in range(spec["token"]))
        return drawn

    def _values(self, user: str | None, values: dict | None) -> dict:
        known = {key: str(value) for key, value in (values or {}).items()
                 if key in self.parameters}
        return {**known, "user": user} if user else known

    def rendered_names(self, user: str, values: dict | None = None) -> dict[str, str]:
        """The names this learner uses: ``lab04-{user}-vm`` with ``user`` (and the
        attempt's drawn values) filled in."""
        fill = self._values(user, values)
        return {key: _fill(value, fill) for key, value in self.names.items()}

    def render(self, text: str, user: str | None = None, values: dict | None = None) -> str:
        """``text`` with the lab's names (``{server}``) and the attempt's values
        (``{size}``) filled in for ``user``.

        Only the lab's own placeholders are replaced (plain text replacement, so
        braces in code blocks stay as they are); without a user, the names keep
        their ``{user}`` part, and without values the parameters their ``{key}``,
        as the published pages show them.
        """
        fill = self._values(user, values)
        for key, template in self.names.items():
            text = text.replace("{" + key + "}", _fill(template, fill))
        for key, value in fill.items():
            text = text.replace("{" + key + "}", value)
        return text

    # The code ---------------------------------------------------------------------------

    def module(self, name: str) -> ModuleType | None:
        """``grade.py`` or ``prepare.py`` of this lab, loaded from its file (or None)."""
        path = self.folder / f"{name}.py"
        if not path.exists():
            return None
        spec = importlib.util.spec_from_file_location(f"novalab_lab_{self.number}_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    @property
    def step_groups(self) -> str:
        return ranges(self.steps)

    @property
    def modern_groups(self) -> str:
        """The modern table's steps this lab teaches, as ranges (``-`` for none)."""
        return ranges(self.modern_steps)

    @property
    def needs_text(self) -> str:
        """What the lab needs, in words: ``running``, ``2 compute hosts``, ``a cloud of
        your own`` (or ``-``)."""
        needs = [*self.needs] + ([f"{self.computes} compute hosts"] if self.computes > 1 else []) \
            + (["a cloud of your own"] if self.operates else [])
        return ", ".join(needs) or "-"


def _fill(template: str, values: dict[str, str]) -> str:
    """``template`` with each ``{key}`` of ``values`` replaced, the others left as they
    are (a name shown before any attempt keeps ``{tag}``)."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template


_SPEC_KINDS = ("choice", "range", "token")


def _parameter_specs(folder: Path, specs: dict) -> dict[str, dict]:
    """The ``[parameters]`` of a lab.toml, checked: one kind each, sensible bounds."""
    for key, spec in specs.items():
        kinds = [kind for kind in _SPEC_KINDS if kind in spec]
        ok = len(kinds) == 1 and key not in ("user", "workdir") and (
            (kinds[0] == "choice" and len(spec["choice"]) >= 2)
            or (kinds[0] == "range" and len(spec["range"]) == 2
                and spec["range"][0] < spec["range"][1])
            or (kinds[0] == "token" and 2 <= int(spec["token"]) <= 16))
        if not ok:
            raise ValueError(f"{folder}/lab.toml: parameter {key!r} needs exactly one of "
                             "choice = [two or more], range = [low, high], token = 2..16")
    return {key: dict(spec) for key, spec in specs.items()}


def ranges(numbers) -> str:
    """``[1, 2, 3, 40, 41]`` -> ``"1-3, 40-41"``."""
    numbers = sorted(set(numbers))
    if not numbers:
        return "-"
    parts, start, prev = [], numbers[0], numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == prev + 1:
            prev = number
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = number
    return ", ".join(parts)


def labs(course_dir: Path = COURSE_DIR) -> list[Lab]:
    """Every lab of the course, in order."""
    return [Lab.load(folder) for folder in sorted(course_dir.iterdir())
            if folder.is_dir() and _FOLDER.match(folder.name)
            and (folder / "lab.toml").exists()]


def find(name: str, course_dir: Path = COURSE_DIR) -> Lab:
    """A lab by its full name (``04-scheduling``), number (``04``, ``4``) or slug."""
    course = labs(course_dir)
    wanted = name.strip().lower()
    for lab in course:
        slug = lab.name.split("-", 1)[1]
        if wanted in (lab.name, lab.number, slug) or (wanted.isdigit() and
                                                       int(wanted) == int(lab.number)):
            return lab
    raise LabNotFound(f"no lab {name!r}; the course: "
                      + ", ".join(lab.name for lab in course))


def uncovered_steps(course: list[Lab]) -> list[int]:
    """Steps of the 58 that no lab has as an objective."""
    taught = {step for lab in course for step in lab.steps}
    return [n for n in range(1, STEPS_IN_FLOW + 1) if n not in taught]
