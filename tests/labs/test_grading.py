"""What checks are given: a grade reads each boot's trace once, however many checks ask."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from novalab.labs.cloud import Cloud
from novalab.labs.course import find
from novalab.labs.grading import Context, Fail
from novalab.tracing.model import Span
from novalab.tracing.store import NoTrace


class Store:
    """A trace store that counts its reads."""

    def __init__(self, spans=None):
        self.spans, self.reads = spans, 0

    def select(self, **words):
        self.reads += 1
        if self.spans is None:
            raise NoTrace("nothing yet")
        return SimpleNamespace(spans=self.spans)


def context(store: Store) -> Context:
    ctx = Context(lab=find("00"), cloud=Cloud("lab", Path("/nonexistent"), {}),
                  user="demo", password="pw", project="demo", workdir=Path("/nonexistent"))
    ctx.__dict__["store"] = store  # the cached property, as the checks see it
    ctx.server = lambda name: {"id": "a5c1d7e0", "name": name}
    return ctx


def test_each_boot_is_read_once_per_grade():
    span = Span("ab" * 16, "cd" * 8, None, "POST /v2.1/servers", "SERVER", "nova-api", 1, 2)
    store = Store([span])
    ctx = context(store)
    assert ctx.boot("vm").trace_id == "ab" * 16
    assert ctx.flow("vm") is ctx.flow("vm")
    assert store.reads == 1


def test_a_boot_without_a_trace_fails_every_check_that_asks_but_is_looked_for_once():
    store = Store(None)
    ctx = context(store)
    for _ in range(3):
        with pytest.raises(Fail, match="no trace of the boot of vm"):
            ctx.flow("vm")
    assert store.reads == 1


# -- which table a boot is graded on ---------------------------------------------------------

RECORDED_CLASSIC = Path(__file__).parents[1] / "diagrams" / "fixtures" / "boot-whole-cast.otlp.json"


@pytest.fixture(scope="module")
def modern_spans(tmp_path_factory) -> list[Span]:
    """The spans of a real boot on an embedded cloud wired as today's Nova."""
    from novalab.diagrams.load import load_trace
    from novalab.reference.deploy.boot import BootRequest, boot
    from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
    from novalab.tracing.setup import Telemetry

    telemetry = Telemetry(memory=True, otlp=False)
    state = tmp_path_factory.mktemp("modern-grading") / "cloud"
    with EmbeddedCloud(CloudConfig(state_dir=state, topology="modern"), telemetry) as cloud:
        result = boot(cloud, BootRequest(name="today"))
        assert result.active, result.server
        spans = list(load_trace(result.spans))
    telemetry.shutdown()
    return spans


def test_a_classic_boot_is_graded_on_the_classic_steps():
    from novalab.diagrams.load import load_trace

    ctx = context(Store(list(load_trace(RECORDED_CLASSIC))))
    result = ctx.require_whole_boot("vm")
    assert result.flow.name == "classic" and result.ok
    assert ctx.flow("vm").result(6).span.service == "nova-api"  # the cast to the scheduler
    assert ctx.flow("vm", None) is result  # the table it shows is the classic one


def test_a_modern_boot_is_not_graded_on_classic_step_numbers(modern_spans):
    """A lab whose steps are the classic table's fails a modern boot, saying why, rather
    than reading modern steps under classic numbers; None grades it on its own table."""
    from novalab.diagrams.flows import get_flow

    ctx = context(Store(modern_spans))
    for ask in (ctx.flow, ctx.require_whole_boot):
        with pytest.raises(Fail, match=r"shows the modern flow .*schedule_and_build_instances"
                                       r".* steps of the classic table"):
            ask("vm")
    result = ctx.require_whole_boot("vm", flow=None)
    assert result.flow.name == "modern"
    assert result.matched == len(get_flow("modern").steps)
    assert ctx.flow("vm", "modern") is result


def test_lab_03_grades_the_cast_the_trace_sent_and_explains_the_hybrid():
    """Classic step 12 casts today's build_and_run_instance where Grizzly's scheduler cast
    run_instance: the answer is the id of the trace's own cast, the table's era's method
    is told why not, and the method itself (everyone's) is not an answer."""
    from novalab.diagrams.load import load_trace

    lab = find("03")
    ctx = context(Store(list(load_trace(RECORDED_CLASSIC))))
    ctx.lab, ctx.names = lab, lab.rendered_names("demo")
    compute_message = lab.module("grade").compute_message
    ctx.answers = {"compute-message": ctx.flow("vm").result(12).span.get("messaging.message.id")}
    compute_message(ctx)
    ctx.answers = {"compute-message": "run_instance"}
    with pytest.raises(Fail, match=r"Grizzly.*hybrid"):
        compute_message(ctx)
    ctx.answers = {"compute-message": "build_and_run_instance"}
    with pytest.raises(Fail, match=r"every boot casts"):
        compute_message(ctx)
