"""The Airflow and MLflow UIs in a real headless Chromium, against `make up` on 127.0.0.1.

The stack is `make up` itself (``docker/up.sh``): Airflow's api-server, scheduler and
dag-processor (their own ``AIRFLOW_HOME`` in a temporary folder, SQLite, no examples, this repo's
``dags/`` and ``plugins/``), the MLflow UI on an embedded SQLite store, which the DAG's tasks
write to (``MLFLOW_TRACKING_URI``) and the links plugin points at (``C4_MLFLOW_UI_URL``), and the
play page; at the end `make down` (``up.sh down``) stops it and must leave nothing running. The
browser logs in with the generated admin password, triggers a two-generation smoke league from
the trigger form, beside three runs triggered over the REST API (two Connect-3 leagues side by
side, one of them twice, which its lease refuses), and follows the links from Airflow to MLflow:
the "MLflow" entry of the navigation bar, and the extra links of a task (on the task instance's
Details tab). The MLflow
checks read the rendered pages (the registered model's description, its versions, their tags and
aliases, the version and run pages, each in the model-training view) and compare them with what
the MLflow client reads from the store.

Everything waits with a deadline. Screenshots go to ``test-artifacts/`` (gitignored); with
``C4_SCREENSHOTS=docs`` the ones the README shows are also written to ``docs/img/``. Without the
browser these tests skip, unless ``C4_REQUIRE_BROWSER=1`` turns the skip into a failure (as in
test_browser.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from servers import answers, free_port, headless_chromium, log_in_to_airflow, require_chromium

from c4core.steps import SPEC_KEYS

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ARTIFACTS = REPO / "test-artifacts"
DOCS_IMG = REPO / "docs" / "img"
DAG_ID = "connect4_league"
VIEW = "?workflowType=machine_learning"  # the plugin's run links open the model-training view
LEAGUE = "ui"
MODEL = "connect4"
# the trigger form's fields: the DAG's params (the steps' spec and the executor), each an input
# named element_<param>
FIELDS = (*SPEC_KEYS, "executor")
SUITE_POSITIONS = 40  # of the shared dev suite, so that every version gets its suite tags, quickly
REST_LEAGUES = ("rest1", "rest2")
"""The leagues triggered over the REST API, of another game than the form's league."""
REST_CONF = {"profile": "smoke", "generations": 1, "game": "connect3-4x4", "iterations": 1, "games": 16}
REST_CONF |= {"match_games": 10}
REST_MODEL = "connect3-4x4"

require_chromium()

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import (  # noqa: E402
    NoSuchElementException,
    StaleElementReferenceException,
    TimeoutException,
)
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.slow


# ---- the servers ---------------------------------------------------------------------------------
@dataclass
class Stack:
    """`make up`'s services (docker/up.sh) running, and a REST session on Airflow."""

    airflow: str
    mlflow: str
    app: str
    tracking_uri: str
    password: str
    token: str
    suite: str
    """The suite file the league scores its snapshots on, or "" for none."""
    proc: subprocess.Popen
    """docker/up.sh itself, in the foreground: it exits once any of its services does."""
    home: Path
    """AIRFLOW_HOME: the services' logs are in ``up-logs/``, their process ids in ``up.pids``."""

    def api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        import requests

        headers = {"Authorization": f"Bearer {self.token}"}
        resp = requests.request(method, self.airflow + path, json=body, headers=headers, timeout=60)
        try:
            return resp.status_code, resp.json()
        except ValueError:
            return resp.status_code, resp.text

    def logs(self) -> str:
        """The end of each service's log, and of up.sh's own output."""
        files = [self.home.parent / "up.out", *sorted((self.home / "up-logs").glob("*.log"))]
        return "\n".join(f"== {f.name}\n{f.read_text()[-2000:]}" for f in files if f.is_file())

    def wait(self, what: str, check: Callable[[], Any], timeout: float) -> Any:
        """Poll `check` every 2 s until it returns something truthy; fail with the services' logs
        if the stack exits or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"docker/up.sh exited waiting for {what}:\n{self.logs()}")
            try:
                result = check()
            except (OSError, ValueError, KeyError):
                result = None
            if result:
                return result
            time.sleep(2)
        pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}:\n{self.logs()}")

    def runs(self) -> list[dict[str, Any]]:
        return self.api("GET", f"/api/v2/dags/{DAG_ID}/dagRuns")[1]["dag_runs"]


def suite_file(tmp: Path) -> str:
    """A few positions of the shared dev suite, or "" (no suite) where this checkout has none."""
    from c4core.games.connect4.suite import default_suite_path

    path = default_suite_path()
    if path is None:
        return ""
    out = tmp / "suite.jsonl"
    lines = Path(path).read_text().splitlines()[:SUITE_POSITIONS]
    out.write_text("\n".join(lines) + "\n")
    return str(out)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """`make up` (docker/up.sh) on free ports, a fresh AIRFLOW_HOME and a fresh embedded MLflow
    store, stopped at the end by `make down` (``up.sh down``), which must leave nothing running."""
    tmp = tmp_path_factory.mktemp("ui")
    home = tmp / "airflow"
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    ports = {"AIRFLOW_PORT": free_port(), "MLFLOW_PORT": free_port(), "APP_PORT": free_port()}
    suite = suite_file(tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "MLFLOW_", "C4_"))}
    env |= {k: str(v) for k, v in ports.items()} | {
        "VENV": str(BIN.parent),
        "AIRFLOW_HOME": str(home),
        "MLFLOW_TRACKING_URI": uri,
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        # the DAG file never changes here: parsed once as it is found, it is not reparsed every
        # 30 s (a fork that imports the DAG), which took CPU from the leagues
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "C4_SUITE": suite,
        "C4_TORCH_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    up = [shutil.which("bash") or "bash", str(REPO / "docker" / "up.sh")]
    with (tmp / "up.out").open("w") as out:
        proc = subprocess.Popen(
            up, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=tmp, start_new_session=True
        )
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    stack = Stack(urls["AIRFLOW_PORT"], urls["MLFLOW_PORT"], urls["APP_PORT"], uri, "", "", suite, proc, home)
    pidfile = home / "up.pids"
    try:
        passwords = home / "simple_auth_manager_passwords.json.generated"

        def login() -> bool:
            import requests

            stack.password = json.loads(passwords.read_text())["admin"]
            resp = requests.post(
                stack.airflow + "/auth/token",
                json={"username": "admin", "password": stack.password},
                timeout=10,
            )
            stack.token = resp.json().get("access_token", "") if resp.ok else ""
            return bool(stack.token)

        stack.wait("the API server and a login", login, 240)
        for name, url in (("the MLflow UI", f"{stack.mlflow}/health"), ("the play page", stack.app + "/")):
            stack.wait(name, lambda url=url: answers(url, timeout=5), 120)
        stack.wait("the DAG to be parsed", lambda: stack.api("GET", f"/api/v2/dags/{DAG_ID}")[0] == 200, 180)
        # up.sh asks the execution API once before its banner, so that no task's first call, and
        # no page waiting behind it, pays for building its routes
        stack.wait("up.sh's banner", lambda: "Ctrl-C stops" in (tmp / "up.out").read_text(), 300)
        api_log = (home / "up-logs" / "airflow-api-server.log").read_text()
        assert re.findall(r"method=\w+ path=/execution/\S*", api_log) == [
            "method=GET path=/execution/health"
        ], api_log[-3000:]
        # up.sh recorded itself and its five services; a second one is refused, naming the file
        ids = [int(line) for line in pidfile.read_text().split()]
        assert ids[0] == proc.pid and len(ids) == 6 and all(alive(i) for i in ids), ids
        again = subprocess.run(up, env=env, capture_output=True, text=True, timeout=60)
        assert again.returncode == 1 and f"process ids in {pidfile}" in again.stderr, again
        yield stack
    finally:
        ids = [int(line) for line in pidfile.read_text().split()] if pidfile.is_file() else []
        down = subprocess.run([*up, "down"], env=env, capture_output=True, text=True, timeout=120)
        proc.wait(60)
        left = [i for i in ids if alive(i)]
        for pid in left[1:]:  # whatever `down` missed, so that no test run leaves it behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    assert down.returncode == 0 and "stopped the stack" in down.stdout, down
    assert not left and not pidfile.exists(), (left, stack.logs())


# ---- the browser ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser(stack: Stack) -> Iterator[webdriver.Chrome]:
    """Chromium, logged in to Airflow."""
    with headless_chromium(1400, 1000) as driver:
        log_in_to_airflow(driver, stack.airflow, stack.password)
        yield driver


def until(driver: webdriver.Chrome, check: Callable[[Any], Any], what: str, timeout: float = 30) -> Any:
    """`WebDriverWait(...).until` that names what it waited for."""
    wait = WebDriverWait(
        driver, timeout, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
    )
    return wait.until(check, f"timed out after {timeout:.0f}s waiting for {what}")


def open_group(driver: webdriver.Chrome, group: str, child: str, tries: int = 3) -> None:
    """Open a task group of the grid until its `child` task's cell shows. A click can land while
    the grid re-renders (after the previous group opened) and be lost, and the grid remembers open
    groups across visits, so the child's cell is the check, not the click."""
    toggle = f"[aria-label='Toggle group'][data-group-id={group}]"
    cell = f"a[id$='-{child}']"

    def shown(d: webdriver.Chrome) -> list[WebElement]:
        return d.find_elements(By.CSS_SELECTOR, cell)

    for _ in range(tries):
        if shown(driver):
            return
        with contextlib.suppress(StaleElementReferenceException, TimeoutException):
            found = until(driver, lambda d: d.find_elements(By.CSS_SELECTOR, toggle), f"{group} in the grid")
            found[0].click()
            until(driver, shown, f"{child} in the grid", timeout=10)
    until(driver, shown, f"{child} in the open group {group}")


def screenshot(driver: webdriver.Chrome, name: str, size: tuple[int, int] | None = None) -> Path:
    """A PNG of the page (at `size` if given) in test-artifacts/, and in docs/img/ with
    C4_SCREENSHOTS=docs."""
    before = driver.get_window_size()
    if size:
        driver.set_window_size(*size)
        time.sleep(1)  # a relayout
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    if os.environ.get("C4_SCREENSHOTS") == "docs":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOCS_IMG / path.name)
    if size:
        driver.set_window_size(before["width"], before["height"])
    return path


def mlflow_view(driver: webdriver.Chrome) -> str | None:
    """Which of MLflow's two views the page shows, by its navigation: ``training`` (it offers
    the model registry) or ``genai`` (prompts instead); None before the navigation renders."""
    links = driver.execute_script("return [...document.querySelectorAll('a')].map(a => a.textContent.trim())")
    if "Model registry" in links and "Prompts" not in links:
        return "training"
    return "genai" if "Prompts" in links else None


def text_of(element: WebElement) -> str:
    """The element's text, whitespace collapsed (hidden and clipped text included)."""
    return re.sub(r"\s+", " ", element.get_attribute("textContent") or "").strip()


# ---- Airflow -------------------------------------------------------------------------------------
def open_trigger_form(driver: webdriver.Chrome, stack: Stack) -> WebElement:
    """The DAG's page, Trigger clicked: returns the dialog, once its form shows."""
    driver.get(f"{stack.airflow}/dags/{DAG_ID}")
    until(
        driver, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=trigger-dag-button]"), "the DAG page"
    )
    driver.find_element(By.CSS_SELECTOR, "[data-testid=trigger-dag-button]").click()
    # the dialog fades in: its fields are in the page before they count as displayed
    until(
        driver,
        lambda d: any(field.is_displayed() for field in d.find_elements(By.NAME, "element_league")),
        "the trigger form",
    )
    return driver.find_element(By.CSS_SELECTOR, ".chakra-dialog__content")


def type_into(field: WebElement, text: str) -> None:
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(Keys.BACKSPACE)
    field.send_keys(text)


def choose(dialog: WebElement, param: str, option: str) -> None:
    """Pick `option` in the select of an enum param (a combobox next to a hidden input)."""
    hidden = dialog.find_element(By.NAME, f"element_{param}")
    box = hidden.find_element(By.XPATH, "./ancestor::*[.//input[@type='text']][1]//input[@type='text']")
    box.click()
    box.send_keys(option)
    box.send_keys(Keys.ENTER)
    assert hidden.get_attribute("value") == option


def test_the_mlflow_entry_in_the_navigation_bar_links_to_the_mlflow_ui(
    browser: webdriver.Chrome, stack: Stack
) -> None:
    browser.get(stack.airflow + "/")
    nav = until(
        browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=nav-sidebar]"), "the nav bar"
    )[0]
    # the menus render after the bar itself, once the UI has fetched the plugins (seconds on a
    # loaded machine)
    menu = "button[aria-label=Browse]"
    browse = until(browser, lambda d: nav.find_elements(By.CSS_SELECTOR, menu), "the Browse menu")
    # no top-level `<button href>` (what Airflow 3.3.2 makes of an external view outside a menu)
    assert not nav.find_elements(By.CSS_SELECTOR, "button[href]")
    browse[0].click()

    def entry(d: Any) -> WebElement | None:
        found = [a for a in d.find_elements(By.CSS_SELECTOR, "[role=menu] a") if a.text.strip() == "MLflow"]
        return found[0] if found else None

    link = until(browser, entry, "MLflow in the Browse menu", 10)
    assert link.get_attribute("href") == f"{stack.mlflow}/#/experiments{VIEW}"
    assert link.get_attribute("target") == "_blank"
    home = browser.current_window_handle
    before = set(browser.window_handles)
    link.click()
    until(browser, lambda d: len(d.window_handles) > len(before), "the MLflow tab", 10)
    (tab,) = set(browser.window_handles) - before
    browser.switch_to.window(tab)
    try:
        until(
            browser, lambda d: d.current_url.startswith(stack.mlflow) and "MLflow" in d.title, "the MLflow UI"
        )
        assert until(browser, mlflow_view, "MLflow's navigation") == "training"
    finally:
        browser.close()
        browser.switch_to.window(home)


def test_the_trigger_form_shows_every_field_and_refuses_a_bad_league_name(
    browser: webdriver.Chrome, stack: Stack
) -> None:
    params = stack.api("GET", f"/api/v2/dags/{DAG_ID}/details")[1]["params"]
    assert set(params) == set(FIELDS)
    dialog = open_trigger_form(browser, stack)
    for name in FIELDS:
        # an input is named after its param; the JSON editor of an object (the recipe) only has its id
        assert dialog.find_elements(By.CSS_SELECTOR, f"[name=element_{name}], #element_{name}"), name
        title = params[name]["schema"]["title"]
        labels = dialog.find_elements(
            By.XPATH, f".//label[normalize-space(.)='{title}' or starts-with(normalize-space(.), '{title} ')]"
        )
        assert labels, title
        until(browser, lambda d, label=labels[0]: label.is_displayed(), f"the label {title!r} shown", 10)
    assert (
        dialog.find_element(By.NAME, "element_profile").get_attribute("value") == params["profile"]["value"]
    )

    # the form will not hold a generation count under the minimum: 0 becomes 1 as the field loses focus
    generations = dialog.find_element(By.NAME, "element_generations")
    type_into(generations, "0")
    dialog.find_element(By.NAME, "element_league").click()
    until(browser, lambda d: generations.get_attribute("value") == "1", "generations clamped to 1", 5)
    type_into(generations, "")

    # a league name with a space: refused with the param's name and the value, and nothing runs.
    # The DAG starts unpaused (it runs only when triggered), so a refusal changes nothing there
    assert stack.api("GET", f"/api/v2/dags/{DAG_ID}")[1]["is_paused"] is False
    runs = len(stack.runs())
    type_into(dialog.find_element(By.NAME, "element_league"), "bad name")
    dialog.find_element(By.CSS_SELECTOR, "[data-testid=trigger-dag-submit]").click()
    until(browser, lambda d: "On instance" in text_of(dialog), "the form's error", 20)
    error = text_of(dialog)
    assert "Invalid input for param league" in error and "'bad name'" in error, error
    assert browser.find_elements(By.CSS_SELECTOR, ".chakra-dialog__content")  # the form stays open
    assert len(stack.runs()) == runs
    assert stack.api("GET", f"/api/v2/dags/{DAG_ID}")[1]["is_paused"] is False


@pytest.fixture(scope="module")
def rest_runs(stack: Stack) -> dict[str, str]:
    """Three runs triggered over Airflow's REST API at once, not waited for: two one-generation
    Connect-3 leagues side by side (`REST_LEAGUES`), and the first of them a second time. Their
    game has a registered model of its own, so they contest no title with the form's league,
    which starts right after them and runs beside them. Run ids by "rest1", "rest2" and
    "rest1 again"."""
    runs = {}
    first, second = REST_LEAGUES
    for key, league in ((first, first), (second, second), (f"{first} again", first)):
        trigger = {"logical_date": None, "conf": REST_CONF | {"league": league}}
        status, body = stack.api("POST", f"/api/v2/dags/{DAG_ID}/dagRuns", trigger)
        assert status == 200, body
        runs[key] = body["dag_run_id"]
    return runs


@pytest.fixture(scope="module")
def league(browser: webdriver.Chrome, stack: Stack, rest_runs: dict[str, str]) -> str:
    """A two-generation smoke league triggered from the form (league `LEAGUE`, one iteration of 16
    games a generation, 10 games a pairing), beside the REST API's runs: its run id, once the run
    has succeeded."""
    dialog = open_trigger_form(browser, stack)
    type_into(dialog.find_element(By.NAME, "element_league"), LEAGUE)
    choose(dialog, "profile", "smoke")
    for name, value in (("iterations", "1"), ("games", "16"), ("match_games", "10")):
        type_into(dialog.find_element(By.NAME, f"element_{name}"), value)
    dialog.find_element(By.TAG_NAME, "h2").click()  # a number field commits as it loses focus
    screenshot(browser, "airflow-trigger-form", size=(1400, 1500))
    dialog.find_element(By.CSS_SELECTOR, "[data-testid=trigger-dag-submit]").click()
    until(browser, lambda d: "/runs/" in d.current_url, "the new run's page")
    run_id = urllib.parse.unquote(browser.current_url.split("/runs/", 1)[1].split("/")[0])
    conf = stack.api("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}")[1]["conf"]
    want = {"league": LEAGUE, "profile": "smoke", "generations": None, "iterations": 1, "games": 16}
    defaults = {
        "roles": None,
        "precision": "auto",
        "game": "connect4",
        "learner": "ppo",
        "value_target": "outcome",
        "recipe": {},
    }
    defaults |= {"executor": "in-process"}
    assert conf == want | {"match_games": 10} | defaults, conf

    def finished() -> str | None:
        state = stack.api("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}")[1]["state"]
        return state if state in ("success", "failed") else None

    # the run's page polls the API and redraws while it is shown, which took CPU from the leagues
    browser.get("about:blank")
    assert stack.wait("the league to finish", finished, 1200) == "success"
    return run_id


def mlflow_client(stack: Stack) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(stack.tracking_uri)


def league_versions(stack: Stack) -> dict[int, Any]:
    """generation -> the league's model version, read by the MLflow client."""
    client = mlflow_client(stack)
    versions = client.search_model_versions(f"name = '{MODEL}'")
    return {int(v.tags["generation"]): v for v in versions if v.tags.get("league") == LEAGUE}


# its setup starts the stack and waits for the leagues: minutes, and more beside another test
# worker (`make test` runs two), over pytest-timeout's default 600 s
@pytest.mark.timeout(1500)
def test_a_smoke_league_triggered_from_the_form_succeeds(
    browser: webdriver.Chrome, stack: Stack, league: str
) -> None:
    states = task_states(stack, league)
    for g in (1, 2):
        assert states[(f"generation_{g}.register_and_promote", -1)] == "success"
    assert states[("generation_3.pick_opponents", -1)] == "skipped"  # decides to stop, shows skipped
    assert states[("generation_3.train_generation", -1)] == "skipped"
    assert sorted(league_versions(stack)) == [1, 2]

    # the grid of the finished run, its first three groups open
    browser.get(f"{stack.airflow}/dags/{DAG_ID}/runs/{urllib.parse.quote(league)}")
    for g in (1, 2, 3):
        open_group(browser, f"generation_{g}", f"generation_{g}.pick_opponents")
    time.sleep(1)  # the grid's cells render after the rows
    screenshot(browser, "airflow-grid")

    # the groups past the league's length render as skipped, like the groups after them, and
    # none of them as the finished ones do (a state's badge: its colour class and its icon)
    def badge(task_id: str) -> str:
        cell = browser.find_element(By.CSS_SELECTOR, f"a[id$='-{task_id}'] [data-testid=task-state-badge]")
        return cell.get_attribute("outerHTML")

    assert badge("generation_3") == badge("generation_4") == badge("generation_20") != badge("generation_2")
    assert badge("generation_3.pick_opponents") == badge("generation_3.train_generation")
    assert badge("generation_3.pick_opponents") != badge("generation_2.pick_opponents")


def task_states(stack: Stack, run_id: str) -> dict[tuple[str, int], str]:
    """(task id, map index) -> state, for every task instance of the run."""
    states: dict[tuple[str, int], str] = {}
    while True:  # pages of at most 100 (the API's cap)
        page = f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances?limit=100&offset={len(states)}"
        tis = stack.api("GET", page)[1]["task_instances"]
        states |= {(t["task_id"], t["map_index"]): t["state"] for t in tis}
        if not tis:
            return states


def test_leagues_triggered_over_rest_run_side_by_side_and_a_second_run_of_one_fails(
    stack: Stack, rest_runs: dict[str, str], league: str
) -> None:
    # a bad value is refused at the door, with the param's name, and nothing runs
    runs = len(stack.runs())
    status, body = stack.api(
        "POST", f"/api/v2/dags/{DAG_ID}/dagRuns", {"logical_date": None, "conf": {"generations": 99}}
    )
    assert status == 400 and "generations" in json.dumps(body), body
    assert len(stack.runs()) == runs

    def finished(run_id: str) -> str | None:
        state = stack.api("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}")[1]["state"]
        return state if state in ("success", "failed") else None

    ended = {k: stack.wait(f"run {k} to finish", lambda r=r: finished(r), 600) for k, r in rest_runs.items()}
    # runs of different leagues go side by side; of the two runs of one league, one trains and
    # the other fails at its first task, naming the run that holds the league
    first, second = REST_LEAGUES
    assert ended[second] == "success"
    assert sorted((ended[first], ended[f"{first} again"])) == ["failed", "success"], ended
    pair = (rest_runs[first], rest_runs[f"{first} again"])
    run_id, refused = pair if ended[first] == "success" else pair[::-1]
    pick = f"/api/v2/dags/{DAG_ID}/dagRuns/{refused}/taskInstances/generation_1.pick_opponents"
    status, ti = stack.api("GET", pick)
    assert status == 200 and ti["state"] == "failed", ti
    status, pick_log = stack.api("GET", pick + "/logs/1")
    held = f"league {REST_MODEL}/{first} is held by airflow {DAG_ID} {run_id}"
    assert status == 200 and held in json.dumps(pick_log), pick_log

    states = task_states(stack, run_id)
    assert len(states) == 101  # 20 groups of five steps, one of them mapped over two matches
    assert states[("generation_1.play_match", 0)] == states[("generation_1.play_match", 1)] == "success"
    assert states[("generation_2.pick_opponents", -1)] == "skipped"  # decides to stop
    assert states[("generation_2.train_generation", -1)] == "skipped"
    status, links = stack.api(
        "GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/generation_1.fit_elo/links"
    )
    assert status == 200, links
    assert "/runs/" in (links["extra_links"].get("MLflow run") or ""), links
    assert f"/#/models/{REST_MODEL}/versions/" in (links["extra_links"].get("Champion") or ""), links
    # the training task's log in the UI holds the same progress lines as `make league` prints
    status, train_log = stack.api(
        "GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/generation_1.train_generation/logs/1"
    )
    text = json.dumps(train_log)
    assert status == 200 and "policy loss" in text, text[-2000:]
    assert "gen1 iteration 1/1: win vs random" in text, text[-2000:]

    # MLflow: each league registered its one snapshot once, the champion is one of them, and the
    # matches of the league run twice came from the run that trained it
    client = mlflow_client(stack)
    champ = client.get_model_version_by_alias(REST_MODEL, "champion")
    assert champ.tags["league"] in REST_LEAGUES and "elo" in champ.tags
    versions = sorted(
        (v.tags["league"], v.tags["member"]) for v in client.search_model_versions(f"name = '{REST_MODEL}'")
    )
    assert versions == [(first, "gen1"), (second, "gen1")]
    exp = client.get_experiment_by_name("connect4-league")
    matches = client.search_runs([exp.experiment_id], f"tags.`c4.kind` = 'match' and tags.league = '{first}'")
    pairs = sorted(tuple(sorted((r.data.tags["a"], r.data.tags["b"]))) for r in matches)
    assert pairs == [("gen1", "random"), ("gen1", "tactical")]
    assert {r.data.tags["airflow.run_id"] for r in matches} == {run_id}


def extra_links(browser: webdriver.Chrome, stack: Stack, run_id: str, task_id: str) -> dict[str, str]:
    """The task's extra links as the UI shows them: on the task instance's Details tab."""
    browser.get(f"{stack.airflow}/dags/{DAG_ID}/runs/{urllib.parse.quote(run_id)}/tasks/{task_id}/details")
    names = ("MLflow run", "Model version", "Champion")

    def shown(d: Any) -> dict[str, dict[str, Any]] | None:
        # read in one script: the page refetches, so element handles may go stale between calls
        found = d.execute_script(
            "return Object.fromEntries([...document.querySelectorAll('a')]"
            ".filter(a => arguments[0].includes(a.textContent.trim()))"
            ".map(a => [a.textContent.trim(),"
            " {href: a.href, target: a.target, shown: a.offsetParent !== null}]))",
            list(names),
        )
        return found if len(found) == len(names) else None

    links = until(browser, shown, f"the extra links of {task_id}")
    assert browser.find_elements(By.XPATH, "//*[normalize-space(text())='Extra Links']")
    for link in links.values():
        assert link["target"] == "_blank" and link["shown"], links
    return {name: link["href"] for name, link in links.items()}


def test_the_extra_links_of_a_task_open_its_run_and_versions_in_mlflow(
    browser: webdriver.Chrome, stack: Stack, league: str
) -> None:
    client = mlflow_client(stack)
    versions = league_versions(stack)
    champion = client.get_model_version_by_alias(MODEL, "champion")
    exp = client.get_experiment_by_name("connect4-league")
    generation_runs = {
        int(r.data.tags["generation"]): r
        for r in client.search_runs(
            [exp.experiment_id], f"tags.`c4.kind` = 'generation' and tags.league = '{LEAGUE}'"
        )
    }
    ui = stack.mlflow
    # generation 1's links, from any task of its group: that generation's run and version, and the
    # champion once it finished (its own snapshot, the league's first)
    first = extra_links(browser, stack, league, "generation_1.fit_elo")
    assert first == {
        "MLflow run": f"{ui}/#/experiments/{exp.experiment_id}/runs/{generation_runs[1].info.run_id}{VIEW}",
        "Model version": f"{ui}/#/models/{MODEL}/versions/{versions[1].version}{VIEW}",
        "Champion": f"{ui}/#/models/{MODEL}/versions/{versions[1].version}{VIEW}",
    }
    second = extra_links(browser, stack, league, "generation_2.register_and_promote")
    assert second == {
        "MLflow run": f"{ui}/#/experiments/{exp.experiment_id}/runs/{generation_runs[2].info.run_id}{VIEW}",
        "Model version": f"{ui}/#/models/{MODEL}/versions/{versions[2].version}{VIEW}",
        "Champion": f"{ui}/#/models/{MODEL}/versions/{champion.version}{VIEW}",
    }

    # and they open those pages
    browser.get(second["MLflow run"])
    run = generation_runs[2]
    until(
        browser, lambda d: run.info.run_id in text_of(d.find_element(By.TAG_NAME, "body")), "the run page", 60
    )
    assert run.info.run_name in text_of(browser.find_element(By.TAG_NAME, "body"))
    assert until(browser, mlflow_view, "MLflow's navigation") == "training"
    for name in ("Model version", "Champion"):
        version = second[name].split("/versions/")[1].removesuffix(VIEW)
        browser.get(second[name])
        until(
            browser,
            lambda d, version=version: (
                f"Version {version}" in text_of(d.find_element(By.TAG_NAME, "body"))
                and "Source Run" in text_of(d.find_element(By.TAG_NAME, "body"))
            ),
            f"the page of version {version}",
            60,
        )
        assert until(browser, mlflow_view, "MLflow's navigation") == "training", name


def test_the_registered_model_lists_the_versions_with_elo_suite_tags_and_the_champion(
    browser: webdriver.Chrome, stack: Stack, league: str
) -> None:
    client = mlflow_client(stack)
    versions = league_versions(stack)
    champion = client.get_model_version_by_alias(MODEL, "champion")
    # the model training view, and no assistant panel over the page
    browser.get(f"{stack.mlflow}/#/models/{MODEL}?workflowType=machine_learning")
    browser.execute_script("localStorage.setItem('mlflow.assistant.panelOpen_v1', 'false')")
    browser.refresh()

    def rows(d: Any) -> dict[str, dict[str, WebElement]] | None:
        """version -> column title -> cell, once every version of the league shows."""
        headers = [text_of(h) for h in d.find_elements(By.CSS_SELECTOR, "[role=columnheader]")]
        found = {}
        for v in versions.values():
            links = d.find_elements(By.CSS_SELECTOR, f"a[href='#/models/{MODEL}/versions/{v.version}']")
            if not links or "Tags" not in headers:
                return None
            row = links[0].find_element(By.XPATH, "./ancestor::*[@role='row'][1]")
            found[v.version] = dict(
                zip(headers, row.find_elements(By.CSS_SELECTOR, "[role=cell]"), strict=True)
            )
        return found

    shown = until(browser, rows, "the versions table", 60)
    # the model's description leads with the registry-wide champion, rendered from its markdown
    lead = f"Champion: version {champion.version}, snapshot {champion.tags['member']} of league {LEAGUE}"
    page = text_of(browser.find_element(By.TAG_NAME, "body"))
    assert lead in page and "**Champion" not in page, page[:2000]
    assert mlflow_view(browser) == "training"
    for v in versions.values():
        row = shown[v.version]
        tags = text_of(row["Tags"])
        for tag in ("league", "generation", "elo", "elo_ci95", "win_vs_tactical"):
            assert f"{tag}: {v.tags[tag]}" in tags, (tag, tags)
        if stack.suite:
            for tag in ("suite_keeps_result", "suite_best_move", "suite_counted"):
                assert f"{tag}: {v.tags[tag]}" in tags, (tag, tags)
        aliases = set(row["Aliases"].text.splitlines())
        if v.version == champion.version:
            assert {"@ champion", f"@ champion-{LEAGUE}"} <= aliases, aliases
        else:
            assert "@ champion" not in aliases, aliases
    screenshot(browser, "mlflow-registered-model", size=(1400, 1400))

    # the league's run: the Elo ladder, one chart per member
    exp = client.get_experiment_by_name("connect4-league")
    (run,) = client.search_runs(
        [exp.experiment_id], f"tags.`c4.kind` = 'league' and tags.league = '{LEAGUE}'"
    )
    browser.get(
        f"{stack.mlflow}/#/experiments/{exp.experiment_id}/runs/{run.info.run_id}/model-metrics?workflowType=machine_learning"
    )
    members = sorted(m.split("/", 1)[1] for m in run.data.metrics if m.startswith("elo/"))
    assert members == ["gen1", "gen2", "random", "tactical"]
    until(
        browser,
        lambda d: all(f"{LEAGUE} (elo/{m})" in d.find_element(By.TAG_NAME, "body").text for m in members),
        "a chart per member",
        60,
    )
    time.sleep(2)  # the charts draw
    screenshot(browser, "mlflow-league-run")
