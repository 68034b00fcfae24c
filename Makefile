# novalab: the two commands a newcomer needs are `make demo` and `make test`.
.PHONY: setup setup-test setup-bench demo test lint bench scale soak services clean

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

test: setup-test services
	.venv/bin/ruff check .
	.venv/bin/pytest

bench: setup services
	.venv/bin/python benchmarks/boot_latency.py

# N compute hosts x M boots; the plots and the table land in docs/perf/.
scale: setup-bench
	.venv/bin/python benchmarks/scale.py --plots docs/perf --markdown docs/perf/scale-table.md

soak: setup
	.venv/bin/python benchmarks/soak.py

clean:
	rm -rf out .pytest_cache
