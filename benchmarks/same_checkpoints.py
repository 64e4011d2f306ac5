"""Same seeds, same checkpoints: a tree's league snapshots, to compare with another tree's.

Trains a tiny two-generation league on the standard board and on Connect-3 4x4, with both
learners' mirror augmentation on (PPO in generation 1, the AlphaZero-style learner in 2), into
OUT, and writes every snapshot's weights to OUT/all.pt. Run it from two checkouts, then compare:

    PYTHONPATH=OLD python benchmarks/same_checkpoints.py run /tmp/old
    PYTHONPATH=NEW python benchmarks/same_checkpoints.py run /tmp/new
    python benchmarks/same_checkpoints.py compare /tmp/old /tmp/new

`compare` prints how many tensors there are and whether every one is bitwise equal
(`torch.equal`), and exits 1 when any differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

import c4core
from c4core.config import profile
from c4core.league.generation import run_league
from c4core.league.store import LocalStore

BOARDS = ((6, 7, 4), (4, 4, 3))


def run(out: Path) -> None:
    torch.set_num_threads(1)
    for rows, cols, connect in BOARDS:
        config = profile(
            "smoke",
            name=f"m{rows}",
            generations=2,
            rows=rows,
            cols=cols,
            connect=connect,
            ppo={"mirror": True},
            alphazero_from=2,
            alphazero={
                "iterations": 2,
                "games": 16,
                "search": {"simulations": 8},
                "batch_size": 64,
                "epochs": 1.0,
            },
        )
        run_league(LocalStore(out / config.name), config)
    tensors = {
        f"{path.relative_to(out)}:{name}": value
        for path in sorted(out.glob("*/gen*.pt"))
        for name, value in torch.load(path, weights_only=True)["model"].items()
    }
    torch.save(tensors, out / "all.pt")
    print(f"{len(tensors)} tensors from the tree at {Path(c4core.__file__).parent.parent} in {out}")


def compare(a: Path, b: Path) -> bool:
    ta, tb = torch.load(a / "all.pt"), torch.load(b / "all.pt")
    same = ta.keys() == tb.keys() and all(torch.equal(ta[k], tb[k]) for k in ta)
    print(f"{len(ta)} and {len(tb)} tensors; bitwise equal: {same}")
    return same


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("run").add_argument("out", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = p.parse_args()
    if args.command == "run":
        run(args.out)
        return 0
    return 0 if compare(args.a, args.b) else 1


if __name__ == "__main__":
    sys.exit(main())
