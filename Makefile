# Two entry points that work on a fresh clone: `make run` (the main job) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint bench clean

$(BIN)/staffstore: pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(BIN)/staffstore

# The main job: every replay, the pair evaluations, the charts and the README's results table.
run: $(BIN)/staffstore
	$(BIN)/staffstore replay all
	$(BIN)/staffstore charts
	$(BIN)/staffstore report --readme README.md

test: $(BIN)/staffstore
	$(BIN)/ruff check .
	$(BIN)/mypy
	# Two workers: most of the suite's time is spent waiting on real processes and servers.
	$(BIN)/pytest -q -n 2

bench: $(BIN)/staffstore
	$(BIN)/python benchmarks/bench_store.py
	$(BIN)/python benchmarks/bench_proxy.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
