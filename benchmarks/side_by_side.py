"""Leagues side by side on one tracking store, round after round: what breaks, and how often.

Each round starts four `smoke` leagues of different names and seeds at once on one store, each
contesting the registry-wide title, plus a second copy of the first. Then it checks the store:
- every league's snapshots, match records and ladder equal those of the same seed run alone;
- every title change from another league's holder has a recorded gating match against exactly
  that holder, and the changes form one chain (`tests/side_by_side.py`, `title_problems`);
- no history row is lost;
- no process printed a traceback, and each failed one said why in its last line.

    python benchmarks/side_by_side.py --rounds 10 --store sqlite-fresh
    python benchmarks/side_by_side.py --rounds 10 --store sqlite-existing
    python benchmarks/side_by_side.py --rounds 10 --store postgres   # Postgres + S3 (moto) server
    python benchmarks/side_by_side.py --rounds 4 --tree /path/to/an/older/checkout

`--tree` runs another checkout's `c4` (its own c4core on PYTHONPATH) to count the failures an older
tree shows; the checks always come from this one.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from side_by_side import finish_all, league_command, league_state, start, title_problems  # noqa: E402

from c4core.tracking.store import Tracking  # noqa: E402

SEEDS = (1, 2, 3, 4)


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """The test suite's Postgres cluster and `mlflow/server-postgres-s3.sh` over moto's S3."""
    import test_registry_postgres as pg
    from servers import tracking_server

    with pg.postgres_cluster() as db, tempfile.TemporaryDirectory() as home:
        env = {"BACKEND_STORE_URI": db.uri()}
        with tracking_server("server-postgres-s3.sh", Path(home), pg.BUCKET, env) as server:
            yield server.url


def references(root: Path) -> dict[int, dict]:
    """Each seed's league run alone, on a store of its own."""
    alone = {s: Tracking.for_uri(f"sqlite:///{root / f'alone{s}' / 'mlflow.db'}") for s in SEEDS}
    procs = [start(league_command(alone[s].tracking_uri, "ref", s), root) for s in SEEDS]
    for rc, _, err in finish_all(procs):
        assert rc == 0, err[-2000:]
    return {s: league_state(alone[s], "ref") for s in SEEDS}


def one_round(uri: str, names: list[str], cwd: Path, env_tree: str | None) -> tuple[list[tuple], float]:
    start_at = time.perf_counter()
    commands = [league_command(uri, n, s) for n, s in zip(names, SEEDS, strict=True)]
    commands.append(league_command(uri, names[0], SEEDS[0]))  # the first league a second time
    if env_tree is not None:
        os.environ["PYTHONPATH"] = env_tree
    try:
        procs = [start(c, cwd) for c in commands]
    finally:
        os.environ.pop("PYTHONPATH", None)
    return finish_all(procs), time.perf_counter() - start_at


def failures(uri: str, names: list[str], done: list[tuple], want: dict[int, dict]) -> list[str]:
    found = []
    for (rc, _, err), who in zip(done, [*names, f"{names[0]} (second copy)"], strict=True):
        last = (err.strip().splitlines() or [""])[-1]
        if "Traceback" in err:
            found.append(f"{who}: traceback, ending {last[:160]!r}")
        elif rc != 0 and "is held by" not in last:
            found.append(f"{who}: exit {rc}: {last[:160]!r}")
    tracking = Tracking.for_uri(uri)
    for name, seed in zip(names, SEEDS, strict=True):
        try:
            got = league_state(tracking, name)
        except Exception as e:  # noqa: BLE001 - a league the checks cannot read is a finding
            found.append(f"{name}: unreadable ({type(e).__name__}: {str(e)[:160]})")
            continue
        for part in ("snapshots", "matches", "ladder"):
            if got[part] != want[seed][part]:
                found.append(f"{name}: {part} differ from the league run alone")
    try:
        found += title_problems(tracking)
    except Exception as e:  # noqa: BLE001 - a store the checks cannot even read is a finding too
        found.append(f"title checks failed: {type(e).__name__}: {e}")
    return found


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--store", choices=("sqlite-fresh", "sqlite-existing", "postgres"), default="sqlite-fresh")
    p.add_argument("--tree", help="run this checkout's c4 instead (the checks stay this tree's)")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="c4-side-"))
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    try:
        want = references(root)
        if args.store == "sqlite-existing":  # made and migrated once, before the rounds
            Tracking.for_uri(f"sqlite:///{root / 'existing' / 'mlflow.db'}").client()
        with postgres_server() if args.store == "postgres" else contextlib.nullcontext() as server:
            bad_rounds, seconds = 0, []
            for r in range(1, args.rounds + 1):
                names = [f"r{r}l{s}" for s in SEEDS]
                if server is not None:
                    uri = server
                elif args.store == "sqlite-fresh":
                    uri = f"sqlite:///{root / f'fresh{r}' / 'mlflow.db'}"
                else:
                    uri = f"sqlite:///{root / 'existing' / 'mlflow.db'}"
                done, secs = one_round(uri, names, root, args.tree)
                found = failures(uri, names, done, want)
                seconds.append(secs)
                bad_rounds += bool(found)
                print(f"round {r}: {secs:.0f} s, {len(found)} problem(s)", flush=True)
                for f in found:
                    print(f"  - {f}", flush=True)
        seconds.sort()
        print(
            f"{args.store}{' (tree ' + args.tree + ')' if args.tree else ''}: {bad_rounds} of {args.rounds} "
            f"rounds with problems; median round {seconds[len(seconds) // 2]:.0f} s"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
