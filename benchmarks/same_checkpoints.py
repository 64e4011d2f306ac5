"""Same seeds, same checkpoints: a tree's league snapshots, to compare with another tree's.

Trains a tiny two-generation league on the standard board and on Connect-3 4x4, with both
learners' mirror augmentation on (PPO in generation 1, the AlphaZero-style learner in 2), into
OUT, and writes every snapshot's weights to OUT/all.pt. Run it from two checkouts, then compare:

    PYTHONPATH=OLD python benchmarks/same_checkpoints.py run /tmp/old
    PYTHONPATH=NEW python benchmarks/same_checkpoints.py run /tmp/new
    python benchmarks/same_checkpoints.py compare /tmp/old /tmp/new

`compare` prints how many tensors there are and whether every one is bitwise equal
(`torch.equal`), and exits 1 when any differs.

A tree whose training key differs (schema 2 of the key rule re-keyed every league, and the key
seeds a league's random streams) gives other snapshots. `run --keys FILE` takes each league's
key from FILE instead, a JSON object of league name to key, such as the older tree's
(`keys` prints this tree's), so that what else changed is compared alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

import c4core
from c4core.config import LeagueConfig, profile
from c4core.league.generation import run_league
from c4core.league.store import LocalStore

BOARDS = ((6, 7, 4), (4, 4, 3))


def configs() -> list[LeagueConfig]:
    """The two leagues: the standard board and Connect-3 on 4x4."""
    return [
        profile(
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
        for rows, cols, connect in BOARDS
    ]


def run(out: Path, keys: dict[str, str] | None = None) -> None:
    torch.set_num_threads(1)
    if keys is not None:  # each league keyed (and so seeded) as the file says
        LeagueConfig.training_hash = lambda self: keys[self.name]  # type: ignore[method-assign]
    for config in configs():
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
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--keys", type=Path, help="a JSON file of league name to training key")
    sub.add_parser("keys")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = p.parse_args()
    if args.command == "run":
        run(args.out, json.loads(args.keys.read_text()) if args.keys else None)
        return 0
    if args.command == "keys":
        print(json.dumps({c.name: c.training_hash() for c in configs()}))
        return 0
    return 0 if compare(args.a, args.b) else 1


if __name__ == "__main__":
    sys.exit(main())
