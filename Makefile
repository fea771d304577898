# Two entry points that work on a fresh clone: `make run` (the main job) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run report test lint bench bench-quick clean

# The oldest Python staffstore runs on (pyproject.toml's requires-python). Checked before the
# venv is made: a venv made by an older Python would break every later `make` until `make clean`.
PY_MIN := 3.11
PY_CHECK := import sys; sys.exit(sys.version_info < tuple(map(int, "$(PY_MIN)".split("."))))

$(BIN)/staffstore: pyproject.toml constraints.txt
	@$(PY) -c '$(PY_CHECK)' 2>/dev/null || { \
	  echo "error: staffstore needs Python $(PY_MIN) or newer; '$(PY)' is $$($(PY) -V 2>&1 || echo missing)." \
	       "Install one and run: make PY=python$(PY_MIN)" >&2; exit 1; }
	@if [ -d $(VENV) ] && ! $(BIN)/python -c '$(PY_CHECK)' 2>/dev/null; then \
	  echo "error: $(VENV) was made by an older or broken Python; run 'make clean', then make again" >&2; \
	  exit 1; fi
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(BIN)/staffstore

# The main job: every replay, the pair evaluations, the charts and the README's results, all
# written into $(RESULTS) (no tracked file changes), then compared with the committed ones
# byte for byte (tools/results.py). `make report` also copies what it reproduced over them.
# STRICT=--strict (CI) fails the run when a reproduced file differs.
RESULTS := build/results
# What could make two machines disagree is pinned: library versions (constraints.txt), one
# thread for every numeric library, and the hash seed.
run: export PYTHONHASHSEED := 0
run: export OMP_NUM_THREADS := 1
run: export OPENBLAS_NUM_THREADS := 1
run: export MKL_NUM_THREADS := 1
run: $(BIN)/staffstore
	$(BIN)/python tools/results.py prepare $(RESULTS)
	$(BIN)/staffstore replay all --out $(RESULTS)/ledgers
	$(BIN)/staffstore charts --ledgers $(RESULTS)/ledgers --out $(RESULTS)/charts
	$(BIN)/staffstore report --ledgers $(RESULTS)/ledgers --charts $(RESULTS)/charts \
	  --readme $(RESULTS)/README.md
	$(BIN)/python tools/results.py compare $(RESULTS) $(STRICT)

report: run
	$(BIN)/python tools/results.py update $(RESULTS)

test: $(BIN)/staffstore
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	# Two workers: most of the suite's time is spent waiting on real processes and servers.
	$(BIN)/pytest -q -n 2

bench: $(BIN)/staffstore
	$(BIN)/python benchmarks/bench_store.py
	$(BIN)/python benchmarks/bench_gate_caches.py
	$(BIN)/python benchmarks/bench_proxy.py
	# The proxy over 100,000 and 1,000,000 claims: about five minutes, half of it the imports.
	$(BIN)/python benchmarks/bench_proxy_scale.py
	$(BIN)/python benchmarks/bench_retrieval.py
	$(BIN)/python benchmarks/bench_long_session.py
	# PostgreSQL beside SQLite (each skips with one line where no PostgreSQL is installed).
	$(BIN)/python benchmarks/bench_backends.py
	$(BIN)/python benchmarks/bench_replicas.py
	$(BIN)/python benchmarks/bench_pg_drivers.py

# CI-sized, in about two minutes: the store and the proxy at small sizes, each into a ledger
# of its own, so the full ones (up to 1,000,000 claims) are never overwritten by them. The
# other benchmarks have no small mode: each runs at one size, and only `make bench` runs them.
bench-quick: $(BIN)/staffstore
	$(BIN)/python benchmarks/bench_store.py --sizes 1000,10000 --samples 1000 \
	  --out ledgers/bench-store-quick.json
	$(BIN)/python benchmarks/bench_proxy_scale.py --sizes 10000 --requests 2000 \
	  --out ledgers/bench-proxy-scale-quick.json

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
