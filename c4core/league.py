"""The league: members, results, `pick_opponents`, and the generation step everything calls.

Members are the two scripted bots plus one frozen snapshot per generation (``gen1``, ``gen2``,
...). A generation trains the learner, continuing from the previous snapshot: PPO against the
bots, three snapshots and itself (the highest-rated, or drawn by prioritized fictitious
self-play, `pfsp_weights`), or, from generation `alphazero_from` on, the AlphaZero-style learner
against itself with search. The new snapshot then plays every member,
and one joint Elo fit over all recorded results rates everyone, whichever learner made it. The
champion is the best-rated snapshot.

The league's state lives behind `LeagueStore`, so the same steps run on a local folder (here)
or on MLflow (`c4core.registry`), and every step is idempotent: a snapshot or match that the
store already holds is reused, never redone, which is what makes a killed league resumable. The
config and the profiles live in `c4core.config`.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from c4core.alphazero import train as train_alphazero
from c4core.bots import BOTS, Player
from c4core.config import BOT_NAMES, LeagueConfig, generation_of, snapshot_name
from c4core.elo import EloFit, fit_elo
from c4core.match import MatchResult, head_to_head, play_match
from c4core.net import Checkpoint, NetPlayer, PolicyValueNet
from c4core.ppo import train as train_ppo


class LeagueStore(Protocol):
    """Where a league keeps its snapshots and match records."""

    def snapshot(self, generation: int) -> Checkpoint | None:
        """The snapshot of `generation`, if it exists."""

    def save_snapshot(self, checkpoint: Checkpoint, metrics: list[dict[str, float]]) -> None:
        """Store a snapshot atomically, with its training metrics per iteration."""

    def results(self) -> list[MatchResult]:
        """Every recorded match."""

    def record_match(self, result: MatchResult) -> None:
        """Record a match; recording the same pairing twice must not double-count."""


class LocalStore:
    """A league kept in a folder: ``gen<g>.pt`` snapshots and ``matches.jsonl``."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, generation: int) -> Path:
        return self.root / f"{snapshot_name(generation)}.pt"

    def snapshot(self, generation: int) -> Checkpoint | None:
        path = self._path(generation)
        return Checkpoint.load(path) if path.exists() else None

    def save_snapshot(self, checkpoint: Checkpoint, metrics: list[dict[str, float]]) -> None:
        checkpoint.save(self._path(checkpoint.generation))
        atomic_write(self.root / f"{snapshot_name(checkpoint.generation)}.metrics.json", json.dumps(metrics))

    def results(self) -> list[MatchResult]:
        path = self.root / "matches.jsonl"
        if not path.exists():
            return []
        return [MatchResult.from_record(json.loads(line)) for line in path.read_text().splitlines() if line]

    def record_match(self, result: MatchResult) -> None:
        existing = self.results()
        if any({r.a, r.b} == {result.a, result.b} for r in existing):
            return
        lines = [json.dumps(r.to_record()) for r in existing + [result]]
        atomic_write(self.root / "matches.jsonl", "\n".join(lines) + "\n")


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file, so a reader never sees half of it."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


# ---- steps ---------------------------------------------------------------------------------------
def members(store: LeagueStore, generations: int) -> list[str]:
    """Bots first, then every snapshot that exists up to `generations`."""
    snaps = [snapshot_name(g) for g in range(1, generations + 1) if store.snapshot(g) is not None]
    return list(BOT_NAMES) + snaps


def fit_ratings(results: Iterable[MatchResult]) -> EloFit | None:
    records = [r.to_record() for r in results]
    return fit_elo(records) if records else None


def pick_opponents(store: LeagueStore, config: LeagueConfig, generation: int) -> list[str]:
    """The learner's opponents for `generation`: both bots, `top_snapshots` snapshots so far
    (the best-rated, or drawn by PFSP: `opponent_sampling`), itself; only itself when the
    AlphaZero-style learner trains it."""
    if config.learner(generation) == "alphazero":
        return ["self"]
    results = store.results()
    snaps = [m for m in members(store, generation - 1) if m not in BOT_NAMES]
    if config.opponent_sampling == "pfsp":
        learner = snapshot_name(generation - 1)  # whose weights the learner starts from
        scores = {}
        for m in snaps:
            wdl = head_to_head(results, learner, m) if m != learner else None
            scores[m] = wdl.score if wdl is not None and wdl.games else None
        weights = pfsp_weights(scores, config.pfsp_prior)
        rng = np.random.default_rng(_seed(config, generation, "pfsp"))
        picked = weighted_sample(weights, config.top_snapshots, rng)
    else:
        fit = fit_ratings(results)
        ratings = fit.ratings if fit else {}
        picked = sorted(snaps, key=lambda m: (-ratings.get(m, float("-inf")), m))[: config.top_snapshots]
    return list(BOT_NAMES) + picked + ["self"]


def pfsp_weights(scores: Mapping[str, float | None], prior: float) -> dict[str, float]:
    """Prioritized fictitious self-play's weighting (Vinyals et al. 2019, AlphaStar): a member
    the learner scores p against (wins, draws half) weighs f(p) = (1 - p)^2, so the members it
    does worst against are drawn most, and one it always beats almost never. A member with no
    record (None) is taken at `prior`."""
    return {m: (1.0 - (prior if p is None else p)) ** 2 for m, p in scores.items()}


def weighted_sample(weights: Mapping[str, float], k: int, rng: np.random.Generator) -> list[str]:
    """`k` distinct names drawn in proportion to `weights`, without replacement (Efraimidis and
    Spirakis 2006: the k largest keys u ** (1 / w)); names of weight 0 come last, in name order."""
    names = sorted(weights)
    u = rng.random(len(names))
    keys = [float(x ** (1.0 / weights[m])) if weights[m] > 0 else 0.0 for x, m in zip(u, names, strict=True)]
    ranked = sorted(zip(keys, names, strict=True), key=lambda kn: (-kn[0], kn[1]))
    return [m for _, m in ranked[:k]]


def load_member(store: LeagueStore, name: str, config: LeagueConfig, greedy: bool = True) -> Player:
    if name in BOTS:
        return BOTS[name]()
    generation = generation_of(name)
    if generation is not None:
        ckpt = store.snapshot(generation)
        if ckpt is not None:
            return NetPlayer(ckpt.build(config.device), name=name, greedy=greedy)
    raise ValueError(f"league {config.name!r} has no member {name!r}")


def train_generation(
    store: LeagueStore,
    config: LeagueConfig,
    generation: int,
    opponents: list[str],
    on_iteration: Callable[[int, dict[str, float]], None] | None = None,
) -> Checkpoint:
    """Train snapshot `generation` (reusing it if the store has it) and store it."""
    existing = store.snapshot(generation)
    if existing is not None:
        return existing
    torch.manual_seed(_seed(config, generation, "init"))
    net = PolicyValueNet(config.net).to(config.device)
    optimizer = torch.optim.Adam(net.parameters(), lr=config.ppo.learning_rate)
    previous = store.snapshot(generation - 1) if generation > 1 else None
    if previous is not None:
        net.load_state_dict(previous.model)
        if previous.optimizer:
            optimizer.load_state_dict(previous.optimizer)
    # snapshots in training play stochastically, so the learner meets varied games
    players = [None if o == "self" else load_member(store, o, config, greedy=False) for o in opponents]
    metrics: list[dict[str, float]] = []

    def record(i: int, m: dict[str, float]) -> None:
        metrics.append(m)
        if on_iteration is not None:
            on_iteration(i, m)

    seed = _seed(config, generation, "train")
    if config.learner(generation) == "alphazero":
        train_alphazero(net, config.alphazero, seed, config.geometry, optimizer, record)
    else:
        for group in optimizer.param_groups:  # the previous generation may have been AlphaZero's
            group["lr"], group["weight_decay"] = config.ppo.learning_rate, 0.0
        train_ppo(net, config.ppo, players, seed, config.geometry, optimizer, record)
    ckpt = Checkpoint.of(net, config.geometry, generation, optimizer, config.to_dict())
    store.save_snapshot(ckpt, metrics)
    return ckpt


def match_seed(config: LeagueConfig, a: str, b: str) -> int:
    return _seed(config, 0, "match:" + "|".join(sorted((a, b))))


def play_league_match(store: LeagueStore, config: LeagueConfig, a: str, b: str) -> MatchResult:
    """Play (or reuse) the match between two members and record it."""
    for r in store.results():
        if {r.a, r.b} == {a, b}:
            return r
    result = play_match(
        load_member(store, a, config),
        load_member(store, b, config),
        config.match_games,
        seed=match_seed(config, a, b),
        opening_plies=config.opening_plies,
        geometry=config.geometry,
        device=config.device,
    )
    store.record_match(result)
    return result


@dataclass(frozen=True)
class GenerationReport:
    """What one generation produced."""

    generation: int
    opponents: list[str]
    matches: list[MatchResult]
    fit: EloFit
    champion: str
    seconds: float


def champion(fit: EloFit) -> str:
    snaps = [m for m in fit.ratings if m not in BOT_NAMES]
    if not snaps:
        raise ValueError("the league has no snapshots yet")
    return max(snaps, key=lambda m: (fit.ratings[m], m))


def run_generation(
    store: LeagueStore,
    config: LeagueConfig,
    generation: int,
    on_iteration: Callable[[int, dict[str, float]], None] | None = None,
) -> GenerationReport:
    """One generation: pick opponents, train, play every member, refit. The single source of
    truth that the CLI and the DAG both call (the DAG calls the same steps one task each)."""
    start = time.perf_counter()
    opponents = pick_opponents(store, config, generation)
    train_generation(store, config, generation, opponents, on_iteration)
    new = snapshot_name(generation)
    matches = [play_league_match(store, config, new, other) for other in members(store, generation - 1)]
    fit = fit_ratings(store.results())
    assert fit is not None  # the new snapshot has just played
    return GenerationReport(generation, opponents, matches, fit, champion(fit), time.perf_counter() - start)


def run_league(
    store: LeagueStore,
    config: LeagueConfig,
    on_generation: Callable[[GenerationReport], None] | None = None,
    on_iteration: Callable[[int, int, dict[str, float]], None] | None = None,
) -> GenerationReport:
    """Run every generation in order (resuming whatever the store already holds)."""
    report = None
    for g in range(1, config.generations + 1):
        cb = (lambda i, m, g=g: on_iteration(g, i, m)) if on_iteration else None
        report = run_generation(store, config, g, cb)
        if on_generation is not None:
            on_generation(report)
    assert report is not None
    return report


def _seed(config: LeagueConfig, generation: int, purpose: str) -> int:
    return zlib.crc32(f"{config.seed}:{config.training_hash()}:{generation}:{purpose}".encode())
