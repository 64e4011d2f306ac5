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


def make_league(tmp_path: Path, *settings: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {
        "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
        "C4_SUITE": "",  # no suite scoring: the smoke nets learn nothing worth scoring
    }
    venv = Path(sys.executable).parents[1]
    return subprocess.run(
        [
            "make",
            "-s",
            "-C",
            str(REPO),
            "league",
            f"VENV={venv}",
            f"AIRFLOW_HOME={tmp_path / 'airflow'}",
            *settings,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_a_league_prints_progress_and_no_airflow_log_lines(tmp_path: Path) -> None:
    proc = make_league(tmp_path, "PROFILE=smoke", "LEAGUE=mk")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    lines = out.splitlines()
    iterations = [ln for ln in lines if re.match(r"gen[12] iteration [12]/2: win vs random \d\.\d\d", ln)]
    assert len(iterations) == 4 and all("policy loss" in ln and "value loss" in ln for ln in iterations)
    matches = [ln for ln in lines if ln.startswith("match gen")]
    assert len(matches) == 2 + 3  # gen1 plays both bots, gen2 both bots and gen1
    assert any(ln.startswith("rank  player") for ln in lines)
    assert any(ln.startswith("champion: gen") for ln in lines)
    assert any(ln.startswith("registry: models:/connect4") for ln in lines)
    assert not [ln for ln in lines if AIRFLOW_LINE.match(ln) or "[DAG TEST]" in ln or "Warning" in ln]
    log = tmp_path / "airflow" / "league.log"
    assert f"Airflow's log is {log}" in out and "[DAG TEST] starting task_id=generation_1" in log.read_text()


def test_a_failed_league_shows_the_failed_task_log(tmp_path: Path) -> None:
    # the gpu profile trains on CUDA, and this machine has none: pick_opponents fails at once
    proc = make_league(tmp_path, "PROFILE=gpu", "LEAGUE=mkfail")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "the league failed" in out
    assert "[DAG TEST] starting task_id=generation_1.pick_opponents" in out  # the failed task's log
    assert "[DAG TEST] starting task_id=generation_2" not in out  # and only that
    errors = [ln for ln in out.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and "trains on CUDA and this machine has none" in errors[0]
