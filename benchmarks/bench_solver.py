"""Exact solver speed and correctness on the solver-labelled suite, by ply bucket.

For every suite position whose ply is in ``--plies`` (default 11-36), solves every column
(`Solver.move_scores`, strong or ``--weak``) with one warm solver, compares the answer with the
suite's labels (Pascal Pons's solver), and reports per ply bucket the positions, mismatches,
median and slowest time per position, and the total.

Usage: python benchmarks/bench_solver.py [--suite FILE] [--plies 11-36] [--weak]
"""

from __future__ import annotations

import argparse
import statistics
import time

from c4core.games.connect4.solver import Solver
from c4core.games.connect4.suite import bucket_of, default_suite_path, load_suite, outcome


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", default=None, help="solver-labelled suite (default: the shared dev suite)")
    p.add_argument("--plies", default="11-36", help="ply range, e.g. 16-36")
    p.add_argument("--weak", action="store_true", help="win/draw/loss only")
    args = p.parse_args()
    path = args.suite or default_suite_path()
    if path is None:
        p.error("no suite: pass --suite FILE")
    lo, _, hi = args.plies.partition("-")
    suite = [q for q in load_suite(path) if int(lo) <= q.ply <= int(hi or lo)]
    if not suite:
        p.error(f"no suite position has a ply in {args.plies}")
    solver = Solver(suite[0].geometry)
    times: dict[str, list[float]] = {}
    wrong: dict[str, int] = {}
    for q in suite:
        start = time.perf_counter()
        got = solver.move_scores(q.position, weak=args.weak)
        spent = time.perf_counter() - start
        want = [None if s is None else (outcome(s) if args.weak else s) for s in q.scores]
        b = bucket_of(q.ply)
        times.setdefault(b, []).append(spent)
        wrong[b] = wrong.get(b, 0) + (got != want)
    print(f"{path}: plies {args.plies}, {'weak' if args.weak else 'strong'} solve of every column")
    print("bucket   positions  mismatches  median_ms  slowest_s  total_s")
    for b, ts in times.items():
        median_ms = statistics.median(ts) * 1e3
        print(f"{b:<7}  {len(ts):9d}  {wrong[b]:10d}  {median_ms:9.1f}  {max(ts):9.2f}  {sum(ts):7.1f}")


if __name__ == "__main__":
    main()
