# novalab: the two commands a newcomer needs are `make demo` and `make test`.
.PHONY: setup setup-test setup-bench demo test test-fast lint bench scale soak services clean

setup:
	@scripts/setup.sh

demo: setup
	.venv/bin/novalab boot --out out/demo

services:
	@scripts/start-services.sh

setup-test:
	@scripts/setup.sh --test

setup-bench:
	@scripts/setup.sh --bench

# Whole modules side by side on JOBS workers, slowest first (tests/conftest.py): the
# suite is mostly waiting on clouds and CLIs, so three workers pay on two cores
# (docs/perf/test-durations.md). JOBS=0 runs in one process.
JOBS ?= 3
PYTEST = .venv/bin/pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder

test: setup-test services
	.venv/bin/ruff check .
	$(PYTEST)

# The contributors' loop: everything but the e2e modules (a serve/up cloud, a real CLI,
# Chromium, private services), in under five minutes.
test-fast: setup-test services
	.venv/bin/ruff check .
	$(PYTEST) -m "not e2e"

bench: setup services
	.venv/bin/python benchmarks/boot_latency.py

# N compute hosts x M boots; the plots and the table land in docs/perf/.
scale: setup-bench
	.venv/bin/python benchmarks/scale.py --plots docs/perf --markdown docs/perf/scale-table.md

soak: setup
	.venv/bin/python benchmarks/soak.py

clean:
	rm -rf out .pytest_cache
