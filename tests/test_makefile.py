"""The README's `make league`: what a user sees on the terminal, on success and on failure.

The Makefile runs the DAG in-process (`airflow dags test`). Airflow's own log lines go to a
file; the steps' progress lines (a line per training iteration and per match, the ladder, the
summary) reach the terminal. On a failure the log of the failed task is shown instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
AIRFLOW_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")  # Airflow's structlog lines start so

pytestmark = pytest.mark.slow


def make_league(home: Path, *settings: str) -> subprocess.Popen[bytes]:
    """`make league` with `settings`, its Airflow and MLflow under `home`, started; its terminal
    output (stdout and stderr, interleaved) goes to ``home/terminal.txt``."""
    # none of this process's Airflow settings (test_dag.py points Airflow at its own database as
    # it is imported): the Makefile's own, as on a user's machine, so each run migrates its own
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")} | {
        "MLFLOW_TRACKING_URI": f"sqlite:///{home / 'mlflow.db'}",
        "C4_SUITE": "",  # no suite scoring: the smoke nets learn nothing worth scoring
    }
    venv = Path(sys.executable).parents[1]
    command = ["make", "-s", "-C", str(REPO), "league", f"VENV={venv}", f"AIRFLOW_HOME={home / 'airflow'}"]
    with (home / "terminal.txt").open("wb") as out:
        return subprocess.Popen([*command, *settings], env=env, stdout=out, stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def leagues(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str, Path]]:
    """Both `make league` runs, started at once (each in its own AIRFLOW_HOME, each waiting mostly
    on its own processes): a one-generation smoke league that succeeds, and a gpu one that fails
    at its first task. Their exit codes, terminal output (stdout and stderr) and homes."""
    homes = {name: tmp_path_factory.mktemp(name) for name in ("ok", "fails")}
    # the gpu profile trains on CUDA, and this machine has none: pick_opponents fails at once
    procs = {
        "ok": make_league(homes["ok"], "PROFILE=smoke", "LEAGUE=mk", "GENERATIONS=1"),
        "fails": make_league(homes["fails"], "PROFILE=gpu", "LEAGUE=mkfail"),
    }
    out = {}
    for name, proc in procs.items():
        try:
            proc.wait(timeout=900)
        finally:
            proc.kill()
        out[name] = (proc.returncode, (homes[name] / "terminal.txt").read_text(), homes[name])
    return out


def test_a_league_prints_progress_and_no_airflow_log_lines(leagues: dict[str, tuple[int, str, Path]]) -> None:
    returncode, out, home = leagues["ok"]
    assert returncode == 0, out
    lines = out.splitlines()
    iterations = [ln for ln in lines if re.match(r"gen1 iteration [12]/2: win vs random \d\.\d\d", ln)]
    assert len(iterations) == 2 and all("policy loss" in ln and "value loss" in ln for ln in iterations)
    matches = [ln for ln in lines if ln.startswith("match gen")]
    assert len(matches) == 2  # gen1 plays both bots
    assert not [ln for ln in lines if ln.startswith("gen2 ")]  # GENERATIONS=1 filled the form
    assert any(ln.startswith("rank  player") for ln in lines)
    assert any(ln.startswith("champion: gen") for ln in lines)
    assert any(ln.startswith("registry: models:/connect4") for ln in lines)
    assert not [ln for ln in lines if AIRFLOW_LINE.match(ln) or "[DAG TEST]" in ln or "Warning" in ln]
    log = home / "airflow" / "league.log"
    assert f"Airflow's log is {log}" in out and "[DAG TEST] starting task_id=generation_1" in log.read_text()


def test_a_failed_league_shows_the_failed_task_log(leagues: dict[str, tuple[int, str, Path]]) -> None:
    returncode, out, _ = leagues["fails"]
    assert returncode != 0
    assert "the league failed" in out
    assert "[DAG TEST] starting task_id=generation_1.pick_opponents" in out  # the failed task's log
    assert "[DAG TEST] starting task_id=generation_2" not in out  # and only that
    errors = [ln for ln in out.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and "trains on CUDA and this machine has none" in errors[0]
