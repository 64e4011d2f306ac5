# Two commands set up a fresh machine: `make league` and `make test` (each creates .venv if missing).
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?=
LEAGUE_FLAGS ?=
UI_PORT ?= 5000
# `make league` runs the DAG connect4_league in-process (`airflow dags test`, SQLite, no server);
# its trigger form as JSON: LEAGUE, PROFILE (default cpu) and GENERATIONS fill it, or give CONF
AIRFLOW_HOME ?= $(CURDIR)/.airflow
LEAGUE ?= default
GENERATIONS ?=
comma := ,
CONF ?= {"league": "$(LEAGUE)", "profile": "$(or $(PROFILE),cpu)"$(if $(GENERATIONS),$(comma) "generations": $(GENERATIONS))}
AIRFLOW_ENV := AIRFLOW_HOME=$(AIRFLOW_HOME) AIRFLOW__CORE__DAGS_FOLDER=$(CURDIR)/dags \
	AIRFLOW__CORE__PLUGINS_FOLDER=$(CURDIR)/plugins AIRFLOW__CORE__LOAD_EXAMPLES=False \
	MLFLOW_CONFIGURE_LOGGING=false MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR=false

.PHONY: venv league league-cli up down test test-fast lint bench ui serve clean

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

venv: $(VENV)/.installed

# Airflow's own log lines go to $(LEAGUE_LOG); the steps' progress lines reach the terminal through
# file descriptor 3 (C4_PROGRESS_FD). On a failure, the log of each failed task is shown.
LEAGUE_LOG ?= $(AIRFLOW_HOME)/league.log
league: venv
	@mkdir -p $(AIRFLOW_HOME)
	@$(AIRFLOW_ENV) $(VENV)/bin/airflow db migrate >$(AIRFLOW_HOME)/migrate.log 2>&1 \
		|| { cat $(AIRFLOW_HOME)/migrate.log; exit 1; }
	@echo "league $(CONF): Airflow's log is $(LEAGUE_LOG)"
	@$(AIRFLOW_ENV) C4_PROGRESS_FD=3 $(VENV)/bin/airflow dags test connect4_league -c '$(CONF)' \
		3>&1 >$(LEAGUE_LOG) 2>&1 || { \
		echo "the league failed. The log of each failed task follows; Airflow's whole log is $(LEAGUE_LOG)"; \
		awk '/\[DAG TEST\] starting task_id=/ { part = ""; failed = 0 } { part = part $$0 "\n" } \
			/new_state=failed/ { failed = 1 } /^[A-Za-z_.]+(Error|Exception): / { error = $$0 } \
			/\[DAG TEST\] end task/ && failed { printf "%s", part; failed = 0 } END { print "error: " error }' \
			$(LEAGUE_LOG); exit 1; }
	@$(AIRFLOW_ENV) $(PY) -m c4core.steps summary --spec '$(CONF)'

# the same league without Airflow: `c4 league` (LEAGUE_FLAGS="--generations 3" passes flags)
league-cli: venv
	$(VENV)/bin/c4 league $(if $(PROFILE),--profile $(PROFILE)) $(LEAGUE_FLAGS)

# Airflow standalone, the MLflow UI and the play page on 127.0.0.1; prints where and how to log in
up: venv
	AIRFLOW_HOME=$(AIRFLOW_HOME) VENV=$(abspath $(VENV)) bash docker/up.sh

# stops what `make up` started, found by the process ids it recorded in $(AIRFLOW_HOME)/up.pids
down:
	@AIRFLOW_HOME=$(AIRFLOW_HOME) VENV=$(abspath $(VENV)) bash docker/up.sh down

# two workers (pytest-xdist), each taking a whole test file at a time (--dist loadfile: a module's
# servers and leagues stay in one process): most tests wait on servers and subprocesses, so two
# fill two cores; TEST_WORKERS=0 runs every test in this one process
TEST_WORKERS ?= 2
test: venv
	$(VENV)/bin/ruff check c4core tests benchmarks dags plugins
	$(PY) -m pytest -q --durations=25 $(if $(filter 0,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist loadfile)

# everything but the tests marked slow (leagues, servers, browsers): a couple of minutes
test-fast: venv
	$(VENV)/bin/ruff check c4core tests benchmarks dags plugins
	$(PY) -m pytest -q -m "not slow"

lint: venv
	$(VENV)/bin/ruff check c4core tests benchmarks dags plugins
	$(VENV)/bin/ruff format --check c4core tests benchmarks dags plugins

# the MLflow UI on the embedded store (mlruns/), bound to 127.0.0.1
ui: venv
	PORT=$(UI_PORT) MLFLOW=$(abspath $(VENV))/bin/mlflow bash mlflow/ui.sh

# the champion behind `mlflow models serve` on 127.0.0.1:5001 (see mlflow/README.md)
serve: venv
	MLFLOW=$(abspath $(VENV))/bin/mlflow bash mlflow/serve-champion.sh

bench: venv
	bash benchmarks/run_all.sh

clean:
	rm -rf $(VENV) runs .pytest_cache .airflow

# the images with podman where no registry is reachable (stand-in bases from Debian packages; root)
.PHONY: images test-pod
images:
	bash docker/build-local.sh

# the images run: the stand-in base, the DAG's trainer pod via `podman kube play`, the MLflow image
test-pod: venv
	C4_REQUIRE_PODMAN=1 $(PY) -m pytest -q tests/test_pod.py
