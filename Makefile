# novalab: the two commands a newcomer needs are `make demo` and `make test`.
.PHONY: setup setup-test demo test lint bench soak services clean

setup:
	@scripts/setup.sh

demo: setup
	.venv/bin/novalab boot --out out/demo

services:
	@scripts/start-services.sh

setup-test:
	@scripts/setup.sh --test

test: setup-test services
	.venv/bin/ruff check .
	.venv/bin/pytest

bench: setup services
	.venv/bin/python benchmarks/boot_latency.py

soak: setup
	.venv/bin/python benchmarks/soak.py

clean:
	rm -rf out .pytest_cache
