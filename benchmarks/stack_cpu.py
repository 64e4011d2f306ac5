"""The CPU a running `make up` stack spends, service by service, and a browser on its pages.

Reads the stack's process groups from ``$AIRFLOW_HOME/up.pids`` (what `docker/up.sh` records:
itself, then api-server, scheduler, dag-processor, the MLflow UI and the play app), and samples
each group's CPU seconds from ``/proc`` over a window, exited children included, so that an
Airflow task forked by the scheduler counts as the scheduler's. With ``--page``, a headless
Chromium logged in to Airflow shows each page in turn for a window, and its process tree's CPU
is sampled too (``about:blank`` is a page). `tests/test_ui.py` starts its stack this way:

    AIRFLOW_PORT=18080 MLFLOW_PORT=15000 APP_PORT=18000 AIRFLOW_HOME=/tmp/stk/home \\
        AIRFLOW__CORE__PARALLELISM=2 AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL=5 \\
        MLFLOW_TRACKING_URI=sqlite:////tmp/stk/mlflow.db bash docker/up.sh &
    python benchmarks/stack_cpu.py /tmp/stk/home --seconds 60
    python benchmarks/stack_cpu.py /tmp/stk/home --seconds 60 \\
        --page 'http://127.0.0.1:18080/dags/connect4_league/runs/RUN_ID' --page about:blank
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from servers import headless_chromium, log_in_to_airflow  # noqa: E402  (the tests' own browser)

SERVICES = ("api-server", "scheduler", "dag-processor", "MLflow UI", "play app")
TICKS = os.sysconf("SC_CLK_TCK")


def processes() -> dict[int, tuple[int, int, float]]:
    """pid -> (parent pid, process group, CPU seconds with waited-for children's)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # it exited meanwhile
            continue
        out[int(entry)] = (int(fields[1]), int(fields[2]), sum(map(int, fields[11:15])) / TICKS)
    return out


def tree(root: int, table: dict[int, tuple[int, int, float]]) -> set[int]:
    """`root` and its descendants."""
    found, grew = {root}, True
    while grew:
        more = {pid for pid, (parent, _, _) in table.items() if parent in found} - found
        found |= more
        grew = bool(more)
    return found


def window(groups: list[int], browser: int | None, seconds: float) -> dict[str, float]:
    """CPU seconds spent by each group, and by the browser's tree, over `seconds`."""
    before = processes()
    time.sleep(seconds)
    after = processes()

    def spent(pids: set[int]) -> float:
        return sum(after[p][2] - (before[p][2] if p in before else 0.0) for p in pids if p in after)

    spent_by = {
        name: spent({p for p, (_, group, _) in after.items() if group == g})
        for name, g in zip(SERVICES, groups, strict=False)
    }
    if browser is not None:
        spent_by["browser"] = spent(tree(browser, after))
    return spent_by


def show(page: str | None, spent: dict[str, float]) -> None:
    print(json.dumps({"page": page, **{k: round(v, 2) for k, v in spent.items()}}), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("airflow_home", type=Path, help="the stack's AIRFLOW_HOME (holding up.pids)")
    p.add_argument("--seconds", type=float, default=60.0, help="the length of each window")
    p.add_argument("--page", action="append", default=[], help="a page the browser shows for a window")
    args = p.parse_args()
    pids = args.airflow_home / "up.pids"
    if not pids.is_file():
        p.error(f"no {pids}: is the stack of {args.airflow_home} up?")
    groups = [int(line) for line in pids.read_text().split()][1:]
    if not args.page:
        show(None, window(groups, None, args.seconds))
        return
    password = json.loads((args.airflow_home / "simple_auth_manager_passwords.json.generated").read_text())
    port = os.environ.get("AIRFLOW_PORT", "8080")
    with headless_chromium(1400, 1000) as driver:
        log_in_to_airflow(driver, f"http://127.0.0.1:{port}", password["admin"])
        for page in args.page:
            driver.get(page)
            time.sleep(5)  # the page's first load is not the steady state
            show(page, window(groups, driver.service.process.pid, args.seconds))


if __name__ == "__main__":
    main()
