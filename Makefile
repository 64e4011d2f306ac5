# Two commands set up a fresh machine: `make league` and `make test` (each creates .venv if missing).
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?=
LEAGUE_FLAGS ?=
UI_PORT ?= 5000

.PHONY: venv league test lint bench ui serve clean

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

# the MLflow UI on the embedded store (mlruns/), bound to 127.0.0.1
ui: venv
	PORT=$(UI_PORT) MLFLOW=$(abspath $(VENV))/bin/mlflow bash mlflow/ui.sh

# the champion behind `mlflow models serve` on 127.0.0.1:5001 (see mlflow/README.md)
serve: venv
	MLFLOW=$(abspath $(VENV))/bin/mlflow bash mlflow/serve-champion.sh

bench: venv
	bash benchmarks/run_all.sh

clean:
	rm -rf $(VENV) runs .pytest_cache
