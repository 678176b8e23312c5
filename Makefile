# WalkerLab: `make run` opens the live monitor, `make test` runs the tests.
# Both create .venv (Python >= 3.12) and install the project into it first.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test setup bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || "$$(sh scripts/find-python.sh)" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/walkerlab monitor

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	$(PY) -m pip install --quiet --no-build-isolation pyhcrf || echo "pyhcrf did not build: bench_hcrf runs without its peer"
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
