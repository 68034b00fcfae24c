"""A learner's filter, enabled in nova.conf, decides where a server lands or why it fails.

Each test edits STATE_DIR/nova.conf and the files of its ``filter_dirs`` on a
running two-host cloud, then boots: the scheduler re-reads them, and the API's
fault or host and the scheduler's span say what it made of them.
"""

from __future__ import annotations

from novalab.tracing import attributes as attr

HOST = "OS-EXT-SRV-ATTR:host"

DEFAULT_FILTERS = "RamFilter, DiskFilter, ComputeFilter, ImagePropertiesFilter"


def test_a_filter_that_rejects_every_host_ends_in_no_valid_host_naming_it(lab):
    lab.write_filter("reject_all.py", """
        from novalab.reference.nova.scheduler import filters

        class RejectAllFilter(filters.BaseHostFilter):
            def host_passes(self, host_state, spec_obj):
                return False
    """)
    lab.configure(enabled_filters=f"{DEFAULT_FILTERS}, RejectAllFilter")
    server = lab.boot("nowhere")
    assert server["status"] == "ERROR" and server["OS-EXT-STS:task_state"] is None
    assert server["fault"]["message"] == (
        "No valid host was found. There are not enough hosts available. "
        "Filter RejectAllFilter returned 0 hosts.")
    assert server["fault"]["code"] == 500
    (span,) = lab.schedule_spans()
    last = lab.events(span, "filter")[-1]
    assert last[attr.NOVA_SCHEDULER_FILTER] == "RejectAllFilter"
    assert (last[attr.NOVA_SCHEDULER_HOSTS_BEFORE], last[attr.NOVA_SCHEDULER_HOSTS_PASSED]) \
        == (2, 0)
    assert sorted(last[attr.NOVA_SCHEDULER_REJECTED_HOSTS]) == ["compute-1", "compute-2"]
    assert last[attr.NOVA_SCHEDULER_FILTER_FILE] == str(lab.filters / "reject_all.py")
    assert not lab.events(span, "weigh")


def test_a_filter_that_passes_only_compute_2_puts_the_server_there(lab):
    # Without it, the tie between two empty hosts goes to compute-1 (listed first).
    lab.write_filter("only_compute2.py", """
        from novalab.reference.nova.scheduler import filters

        class OnlyCompute2Filter(filters.BaseHostFilter):
            \"\"\"Pass only the host named compute-2.\"\"\"

            def host_passes(self, host_state, spec_obj):
                return host_state.host == "compute-2"
    """)
    lab.configure(enabled_filters=f"OnlyCompute2Filter, {DEFAULT_FILTERS}")
    server = lab.boot("there")
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server[HOST] == "compute-2"
    (span,) = lab.schedule_spans()
    assert span.attributes[attr.NOVA_SCHEDULER_ENABLED_FILTERS] == (
        "OnlyCompute2Filter", "RamFilter", "DiskFilter", "ComputeFilter",
        "ImagePropertiesFilter")
    first = lab.events(span, "filter")[0]
    assert first[attr.NOVA_SCHEDULER_FILTER] == "OnlyCompute2Filter"
    assert first[attr.NOVA_SCHEDULER_PASSED_HOSTS] == ("compute-2",)
    assert first[attr.NOVA_SCHEDULER_REJECTED_HOSTS] == ("compute-1",)
    (weigh,) = lab.events(span, "weigh")
    assert weigh[attr.NOVA_SCHEDULER_CHOSEN_HOST] == "compute-2"
    assert span.attributes[attr.NOVA_SCHEDULER_CHOSEN_HOSTS] == ("compute-2",)


def test_a_filter_file_with_a_syntax_error_is_a_clear_fault(lab):
    path = lab.write_filter("broken.py", """
        from novalab.reference.nova.scheduler import filters

        class BrokenFilter(filters.BaseHostFilter)
            def host_passes(self, host_state, spec_obj):
                return True
    """)
    lab.configure(enabled_filters=f"{DEFAULT_FILTERS}, BrokenFilter")
    server = lab.boot("broken")
    assert server["status"] == "ERROR"
    message = server["fault"]["message"]
    assert message.startswith(f"Scheduler Host Filter file {path} could not be loaded: "
                              "SyntaxError: ")
    assert "line 4" in message
    # Fixed, the same cloud schedules again: the scheduler saw the file change.
    lab.write_filter("broken.py", """
        from novalab.reference.nova.scheduler import filters

        class BrokenFilter(filters.BaseHostFilter):
            def host_passes(self, host_state, spec_obj):
                return True
    """)
    assert lab.boot("fixed")["status"] == "ACTIVE"


def test_a_filter_that_raises_names_itself_the_host_and_the_error(lab, caplog):
    lab.write_filter("crash.py", """
        from novalab.reference.nova.scheduler import filters

        class CrashFilter(filters.BaseHostFilter):
            def host_passes(self, host_state, spec_obj):
                return spec_obj["flavor"]["no_such_key"] > 0
    """)
    lab.configure(enabled_filters="CrashFilter")
    server = lab.boot("crash")
    assert server["status"] == "ERROR"
    assert server["fault"]["message"] == (
        "Scheduler Host Filter CrashFilter failed: host_passes(compute-1) raised "
        "KeyError: 'no_such_key' (crash.py, line 6)")
    # nova-scheduler logs it (before the fault is written), with the learner's traceback.
    (record,) = [r for r in caplog.records if r.name.endswith("scheduler.manager")]
    assert record.levelname == "ERROR" and "CrashFilter failed" in record.getMessage()
    assert isinstance(record.exc_info[1].__cause__, KeyError)


def test_an_unknown_filter_name_is_upstreams_filter_not_found(lab):
    lab.configure(enabled_filters="RamFilter, NoSuchFilter")
    server = lab.boot("unknown")
    assert server["status"] == "ERROR"
    assert server["fault"]["message"] == "Scheduler Host Filter NoSuchFilter could not be found."


def test_the_ram_weigher_spreads_and_a_negative_multiplier_stacks(lab):
    """Spreading (the default) puts the second server on the emptier host; with
    ram_weight_multiplier < 0 the emptiest host loses and servers stack. The
    scheduler's span alone shows which host had the most free RAM and won."""
    first = lab.boot("first", flavor="1")
    assert first["status"] == "ACTIVE" and first[HOST] == "compute-1"  # a tie: listed first

    spread = lab.boot("spread", flavor="1")
    assert spread[HOST] == "compute-2"
    weigh = lab.events(lab.schedule_spans()[-1], "weigh")[0]
    free = dict(zip(weigh[attr.NOVA_SCHEDULER_WEIGHED_HOSTS],
                    weigh[attr.NOVA_SCHEDULER_FREE_RAM_MB], strict=True))
    assert weigh[attr.NOVA_SCHEDULER_CHOSEN_HOST] == max(free, key=free.get) == "compute-2"
    assert free["compute-2"] - free["compute-1"] == 512
    weights = weigh[attr.NOVA_SCHEDULER_WEIGHTS]
    assert list(weights) == sorted(weights, reverse=True) and weights[0] > weights[1]

    third = lab.boot("third", flavor="1")  # a tie again (one m1.tiny on each)
    assert third[HOST] == "compute-1"
    lab.configure(ram_weight_multiplier="-1.0")
    stacked = lab.boot("stacked", flavor="1")
    assert stacked["status"] == "ACTIVE" and stacked[HOST] == "compute-1"
    span = lab.schedule_spans()[-1]
    assert span.attributes[attr.NOVA_SCHEDULER_RAM_WEIGHT_MULTIPLIER] == -1.0
    weigh = lab.events(span, "weigh")[0]
    free = dict(zip(weigh[attr.NOVA_SCHEDULER_WEIGHED_HOSTS],
                    weigh[attr.NOVA_SCHEDULER_FREE_RAM_MB], strict=True))
    assert weigh[attr.NOVA_SCHEDULER_CHOSEN_HOST] == min(free, key=free.get) == "compute-1"
    assert weigh[attr.NOVA_SCHEDULER_WEIGHTS][-1] < weigh[attr.NOVA_SCHEDULER_WEIGHTS][0]
