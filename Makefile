# Two commands set up a fresh machine: `make league` and `make test` (each creates .venv if missing).
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?=
LEAGUE_FLAGS ?=

.PHONY: venv league test lint bench clean

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

venv: $(VENV)/.installed

league: venv
	$(VENV)/bin/c4 league $(if $(PROFILE),--profile $(PROFILE)) $(LEAGUE_FLAGS)

test: venv
	$(VENV)/bin/ruff check c4core tests benchmarks
	$(PY) -m pytest -q

lint: venv
	$(VENV)/bin/ruff check c4core tests benchmarks
	$(VENV)/bin/ruff format --check c4core tests benchmarks

bench: venv
	bash benchmarks/run_all.sh

clean:
	rm -rf $(VENV) runs .pytest_cache
