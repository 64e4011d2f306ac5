"""`make up`'s footprint: the time until all three services answer, and their memory as PSS.

Starts `docker/up.sh` (or another version of it, `--script`) on free ports, a fresh AIRFLOW_HOME
and a fresh embedded MLflow store, and times it until Airflow's health endpoint, MLflow's
`/health` and the play page all answer. After `--settle` seconds more (the services start
helpers after they first answer), it sums the proportional set size (`Pss` in each process's
`/proc/<pid>/smaps_rollup`) over the whole process tree, per service: a sum of RSS would count
every page shared between forked workers once per process. Then it stops the stack through the
script's own SIGTERM handler and checks that nothing of the tree is left.

    python benchmarks/up_stack.py --rounds 3
    git show REV:docker/up.sh > docker/up-before.sh
    python benchmarks/up_stack.py --rounds 3 --script docker/up-before.sh --script docker/up.sh

Rounds alternate between the scripts, so both see the same machine.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from servers import answers, free_port  # noqa: E402


def tree(root: int) -> list[int]:
    """`root` and every process descended from it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def service_of(pid: int) -> str:
    """The service a process belongs to, by its command line."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    for name, marker in (("app", "serve-app"), ("airflow", "airflow"), ("mlflow", "mlflow")):
        if marker in cmd:
            return name
    return "other"


def one_round(script: Path, settle: float) -> dict[str, float]:
    ports = {k: free_port() for k in ("AIRFLOW_PORT", "MLFLOW_PORT", "APP_PORT")}
    with tempfile.TemporaryDirectory(prefix="up-stack-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "MLFLOW_", "C4_"))}
        env |= {k: str(v) for k, v in ports.items()}
        env |= {
            "AIRFLOW_HOME": f"{tmp}/airflow",
            "MLFLOW_TRACKING_URI": f"sqlite:///{tmp}/mlflow.db",
            "VENV": str(Path(sys.executable).parent.parent),
        }
        urls = {
            "airflow": f"http://127.0.0.1:{ports['AIRFLOW_PORT']}/api/v2/monitor/health",
            "mlflow": f"http://127.0.0.1:{ports['MLFLOW_PORT']}/health",
            "app": f"http://127.0.0.1:{ports['APP_PORT']}/",
        }
        start = time.monotonic()
        proc = subprocess.Popen(
            ["bash", str(script)], env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            up: dict[str, float] = {}
            while len(up) < len(urls):
                if proc.poll() is not None:
                    raise SystemExit(f"{script} exited with {proc.returncode} before every service answered")
                if time.monotonic() - start > 600:
                    raise SystemExit(f"{script}: not every service answered in 600 s: {sorted(up)}")
                for name, url in urls.items():
                    if name not in up and answers(url):
                        up[name] = time.monotonic() - start
                time.sleep(0.5)
            time.sleep(settle)
            pids = tree(proc.pid)
            by_service: dict[str, int] = {}
            for pid in pids:
                by_service[service_of(pid)] = by_service.get(service_of(pid), 0) + pss_kib(pid)
        finally:
            proc.send_signal(signal.SIGTERM)  # the script's trap stops every service
            proc.wait(120)
        time.sleep(2)
        left = [pid for pid in pids if Path(f"/proc/{pid}").exists() and service_of(pid) != "gone"]
        if left:
            raise SystemExit(f"{script}: {len(left)} processes outlived the stack: {left}")
    out = {"seconds_to_all": max(up.values()), "processes": float(len(pids))}
    out |= {f"pss_mb_{k}": v / 1024 for k, v in sorted(by_service.items())}
    out["pss_mb_total"] = sum(by_service.values()) / 1024
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=30.0, help="seconds after all answer, before PSS")
    parser.add_argument("--script", type=Path, action="append", help="an up.sh (default docker/up.sh)")
    args = parser.parse_args()
    scripts = [s.resolve() for s in (args.script or [REPO / "docker" / "up.sh"])]
    results: dict[Path, list[dict[str, float]]] = {s: [] for s in scripts}
    for r in range(args.rounds):
        for script in scripts:
            got = one_round(script, args.settle)
            results[script].append(got)
            shown = ", ".join(f"{k} {v:.0f}" for k, v in got.items())
            print(f"round {r + 1} {script.name}: {shown}", flush=True)
    for script, rounds in results.items():
        keys = sorted({k for got in rounds for k in got})
        med = {k: statistics.median(got.get(k, 0.0) for got in rounds) for k in keys}
        print(f"median of {len(rounds)} {script.name}: " + ", ".join(f"{k} {v:.0f}" for k, v in med.items()))


if __name__ == "__main__":
    main()
