"""Test helpers for real servers on 127.0.0.1: a free port, an MLflow tracking server (one of the
`mlflow/` scripts) whose artifacts go to moto's S3, and checks of what a league leaves on such a
server. Shared by the test files that need them; pytest puts this folder on `sys.path`, so they
import it as `servers`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
"""Debian's Chromium and its driver (``apt-get install chromium chromium-driver``)."""


def require_chromium() -> None:
    """Skip the calling test module unless Debian's Chromium and its driver are installed; with
    ``C4_REQUIRE_BROWSER=1`` (CI) fail instead."""
    import pytest

    if CHROMIUM.exists() and CHROMEDRIVER.exists():
        return
    if os.environ.get("C4_REQUIRE_BROWSER") == "1":
        raise RuntimeError("C4_REQUIRE_BROWSER=1 but /usr/bin/chromium or /usr/bin/chromedriver is missing")
    pytest.skip(
        "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )


@contextmanager
def headless_chromium(width: int, height: int) -> Iterator[Any]:
    """Chromium under selenium: headless, in a throwaway profile, fetching nothing of its own
    (selenium-manager offline, no background networking, updates or sync)."""
    import shutil
    import tempfile

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # selenium-manager may never fetch a driver or a browser
    profile = tempfile.mkdtemp(prefix="c4-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_window_size(width, height)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def log_in_to_airflow(driver: Any, airflow: str, password: str, timeout: float = 30) -> None:
    """Log a `headless_chromium` in to the Airflow UI at `airflow` as ``admin``, and wait for its
    home page; `TimeoutException` names the page that did not come."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,))
    driver.set_page_load_timeout(60)
    driver.get(airflow + "/")
    wait.until(
        lambda d: d.find_elements(By.NAME, "username"),
        f"timed out after {timeout:.0f}s waiting for the login form",
    )
    driver.find_element(By.NAME, "username").send_keys("admin")
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait.until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=nav-sidebar]"),
        f"timed out after {timeout:.0f}s waiting for the home page",
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(url: str, timeout: float = 2) -> bool:
    """Whether `url` answers 2xx now (a refused or timed-out connection is a no)."""
    import requests

    try:
        return requests.get(url, timeout=timeout).ok
    except requests.RequestException:
        return False


def wait_for_http(url: str, proc: subprocess.Popen, log: Path, what: str, timeout: float) -> None:
    """Poll `url` until it answers 2xx; fail with the tail of `log` if `proc` exits first or
    `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        if answers(url):
            return
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.3)


@dataclass
class Server:
    """A running tracking server and the S3 bucket that holds its artifacts."""

    url: str
    s3: object
    bucket: str
    prefix: str = "mlflow/"


@contextmanager
def tracking_server(
    script: str, home: Path, bucket: str, env: Mapping[str, str] | None = None
) -> Iterator[Server]:
    """Run ``mlflow/<script>`` on a free port with artifacts in ``s3://<bucket>/mlflow`` (moto)."""
    import boto3
    from moto.server import ThreadedMotoServer

    s3_port, port = free_port(), free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=s3_port, verbose=False)
    moto.start()
    keys = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    endpoint = f"http://127.0.0.1:{s3_port}"
    s3 = boto3.client("s3", endpoint_url=endpoint, **{k.lower(): v for k, v in keys.items() if "KEY" in k})
    # moto keeps one in-memory S3 per process, so each server needs a bucket of its own
    s3.create_bucket(Bucket=bucket)
    full_env = (
        os.environ
        | keys
        | {
            "MLFLOW_HOME": str(home),
            "ARTIFACTS_DESTINATION": f"s3://{bucket}/mlflow",
            "MLFLOW_S3_ENDPOINT_URL": endpoint,
            "PORT": str(port),
            "MLFLOW": str(Path(sys.executable).parent / "mlflow"),
        }
        | dict(env or {})
    )
    full_env.pop("MLFLOW_TRACKING_URI", None)
    log_path = home / "server.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        ["bash", str(REPO / "mlflow" / script)], env=full_env, stdout=log, stderr=log, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{url}/health", proc, log_path, "mlflow server", 180)
        yield Server(url, s3, bucket)
    finally:
        for sig, grace in ((signal.SIGTERM, 3), (signal.SIGKILL, 10)):  # the whole process group
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(grace)
                break
            except subprocess.TimeoutExpired:
                continue
        log.close()
        moto.stop()


def runs_of(client: Any, kind: str, league_name: str, view: int | None = None) -> list:
    """The league's runs of one kind (``league``, ``generation``, ``match``); active ones by default."""
    from mlflow.entities import ViewType

    exp = client.get_experiment_by_name("connect4-league")
    flt = f"tags.`c4.kind` = '{kind}' and tags.league = '{league_name}'"
    view = ViewType.ACTIVE_ONLY if view is None else view
    return client.search_runs([exp.experiment_id], flt, run_view_type=view, max_results=1000)


def check_smoke_league_on_server(store: Any, client: Any, final: Any, league: str) -> None:
    """What a finished two-generation smoke league leaves on a tracking server: a version per
    snapshot with its tags, the champion in Production under the alias, one record per pairing."""
    import json

    from c4core.tracking.store import CHAMPION_ALIAS, MODEL_NAME, pair_key
    from c4core.tracking.versions import league_versions

    versions = league_versions(store)
    assert sorted(versions) == [1, 2]
    for g, v in versions.items():
        assert {"league", "generation", "elo", "elo_ci95", "win_vs_tactical"} <= v.tags.keys()
        assert v.tags["generation"] == str(g)
    champ = client.get_model_version_by_alias(MODEL_NAME, CHAMPION_ALIAS)
    assert champ.current_stage == "Production" and champ.tags["member"] == final.report.champion
    records = [json.loads(r.data.tags["c4.record"]) for r in runs_of(client, "match", league)]
    assert len(records) == 5 and len({pair_key(r["a"], r["b"]) for r in records}) == 5
