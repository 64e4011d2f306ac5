"""The league: members, results, `pick_opponents`, and the generation step everything calls.

Members are the two scripted bots plus one frozen snapshot per generation (``gen1``, ``gen2``,
...). A generation trains the learner, continuing from the previous snapshot: PPO against the
bots, the three highest-rated snapshots and itself, or, from generation `alphazero_from` on, the
AlphaZero-style learner against itself with search. The new snapshot then plays every member,
and one joint Elo fit over all recorded results rates everyone, whichever learner made it. The
champion is the best-rated snapshot.

The league's state lives behind `LeagueStore`, so the same steps run on a local folder (here)
or on MLflow (`c4core.registry`), and every step is idempotent: a snapshot or match that the
store already holds is reused, never redone, which is what makes a killed league resumable.
"""

from __future__ import annotations

import hashlib
import json
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import torch

from c4core.alphazero import AlphaZeroConfig
from c4core.alphazero import train as train_alphazero
from c4core.bots import BOTS, Player
from c4core.elo import EloFit, fit_elo
from c4core.game import Geometry
from c4core.match import MatchResult, play_match
from c4core.net import Checkpoint, NetConfig, NetPlayer, PolicyValueNet
from c4core.ppo import PPOConfig
from c4core.ppo import train as train_ppo

BOT_NAMES = ("random", "tactical")


@dataclass(frozen=True)
class LeagueConfig:
    """Everything that defines a league run; its hash keys resumable work."""

    name: str = "default"
    """League name: snapshots and records are grouped by it."""
    profile: str = "custom"
    """Which profile this config came from (informational)."""
    generations: int = 4
    """Generations to run."""
    ppo: PPOConfig = field(default_factory=PPOConfig)
    """PPO learner hyperparameters per generation."""
    alphazero: AlphaZeroConfig = field(default_factory=AlphaZeroConfig)
    """AlphaZero-style learner hyperparameters per generation (see `alphazero_from`)."""
    alphazero_from: int = 0
    """First generation trained by the AlphaZero-style learner, continuing from the previous
    snapshot; earlier generations train by PPO. 0: PPO throughout."""
    net: NetConfig = field(default_factory=NetConfig)
    """Network shape."""
    match_games: int = 400
    """Games per pairing when a new snapshot plays the league (even: both colours)."""
    opening_plies: int = 4
    """Random opening plies in league matches."""
    top_snapshots: int = 3
    """How many of the best-rated snapshots the learner trains against."""
    rows: int = 6
    """Board rows."""
    cols: int = 7
    """Board columns."""
    connect: int = 4
    """Stones in a row to win."""
    seed: int = 0
    """Seed of training and matches."""
    device: str = "cpu"
    """Torch device for training and net play."""

    def __post_init__(self) -> None:
        if not self.name or not all(ch.isalnum() or ch in "-_." for ch in self.name):
            raise ValueError(f"league name {self.name!r} must be letters, digits, '-', '_' or '.'")
        if self.generations < 1:
            raise ValueError("generations must be at least 1")
        if self.match_games < 2 or self.match_games % 2:
            raise ValueError("match_games must be an even number of at least 2")
        if self.alphazero_from < 0:
            raise ValueError("alphazero_from must be 0 (never) or a generation number")
        if self.net.rows != self.rows or self.net.cols != self.cols:
            raise ValueError("the network's board size must match the league's")
        Geometry(self.rows, self.cols, self.connect)

    @property
    def geometry(self) -> Geometry:
        return Geometry(self.rows, self.cols, self.connect)

    def learner(self, generation: int) -> str:
        """Which learner trains `generation`: ``"ppo"`` or ``"alphazero"``."""
        return "alphazero" if 0 < self.alphazero_from <= generation else "ppo"

    def iterations(self, generation: int) -> int:
        """Training iterations of `generation` (its learner's)."""
        return (self.alphazero if self.learner(generation) == "alphazero" else self.ppo).iterations

    def describe_training(self) -> str:
        """One line on how the generations train, for logs and model cards."""
        p, a = self.ppo, self.alphazero
        ppo_gens = (
            self.generations if not self.alphazero_from else min(self.generations, self.alphazero_from - 1)
        )
        parts = []
        if ppo_gens:
            parts.append(
                f"{ppo_gens} PPO generation(s) x {p.iterations} iterations x {p.games} games against "
                "random, tactical, the best snapshots and itself"
            )
        if self.generations > ppo_gens:
            parts.append(
                f"{self.generations - ppo_gens} AlphaZero generation(s) x {a.iterations} iterations x "
                f"{a.games} self-play games searched at {a.simulations} simulations a move"
                + (f", rescored by the exact solver from ply {a.solve_from}" if a.solve_from else "")
                + (f", the search probing it at leaves from ply {a.probe_from}" if a.probe_from else "")
            )
        return ", then ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LeagueConfig:
        d = dict(d)
        d["ppo"] = PPOConfig(**d.get("ppo", {}))
        d["net"] = NetConfig(**d.get("net", {}))
        d["alphazero"] = AlphaZeroConfig(**d.get("alphazero", {}))
        return cls(**d)

    def training_hash(self) -> str:
        """Hash of everything that changes what a generation produces (not its name or length),
        so a rerun of the same league reuses work and a changed recipe never does."""
        d = self.to_dict()
        for k in ("name", "generations", "profile", "device"):
            d.pop(k)
        if not self.alphazero_from:  # PPO-only leagues keep the hashes they had before it existed
            d.pop("alphazero")
            d.pop("alphazero_from")
        else:  # and AlphaZero leagues those from before each of the solver's uses
            if not self.alphazero.solve_from:
                d["alphazero"].pop("solve_from")
                d["alphazero"].pop("solve_nodes")
            if not self.alphazero.probe_from:
                d["alphazero"].pop("probe_from")
                d["alphazero"].pop("probe_nodes")
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]


PROFILES: dict[str, LeagueConfig] = {
    "smoke": LeagueConfig(
        profile="smoke",
        generations=2,
        ppo=PPOConfig(iterations=2, games=32, minibatch_size=256, update_epochs=1),
        net=NetConfig(blocks=1, channels=8, value_hidden=16),
        match_games=20,
    ),
    "cpu": LeagueConfig(
        profile="cpu",
        generations=6,
        ppo=PPOConfig(iterations=25, games=768),
        net=NetConfig(blocks=2, channels=32),
        match_games=400,
    ),
    # the cpu profile's six PPO generations, then twelve AlphaZero-style generations continuing
    # from them, rescored by the exact solver from ply 16: 101 minutes on 2 cores
    # (docs/BENCHMARKS.md)
    "cpu-az": LeagueConfig(
        profile="cpu-az",
        generations=18,
        ppo=PPOConfig(iterations=25, games=768),
        alphazero=AlphaZeroConfig(
            iterations=40,
            games=256,
            simulations=64,
            opening_plies=2,
            opening_plies_max=24,
            replay_iterations=8,
            solve_from=16,
        ),
        alphazero_from=7,
        net=NetConfig(blocks=2, channels=32),
        match_games=400,
    ),
    "gpu": LeagueConfig(
        profile="gpu",
        generations=20,
        ppo=PPOConfig(iterations=25, games=2048, learning_rate=3e-4, minibatch_size=2048),
        net=NetConfig(blocks=4, channels=64),
        match_games=400,
        device="cuda",
    ),
}


def profile(profile_name: str, /, **overrides: Any) -> LeagueConfig:
    """A named profile, with field overrides (``ppo``/``alphazero``/``net`` fields go in dicts)."""
    if profile_name not in PROFILES:
        raise ValueError(f"unknown profile {profile_name!r}: choose from {', '.join(PROFILES)}")
    base = PROFILES[profile_name]
    nested = {k: overrides.pop(k) for k in ("ppo", "alphazero", "net") if isinstance(overrides.get(k), dict)}
    cfg = replace(base, **overrides)
    return replace(cfg, **{k: replace(getattr(cfg, k), **v) for k, v in nested.items()})


def with_training(
    config: LeagueConfig, iterations: int | None = None, games: int | None = None
) -> LeagueConfig:
    """`config` with both learners' iterations per generation and games per iteration replaced
    where given (the trigger form's and the CLI's overrides)."""
    change = {k: v for k, v in (("iterations", iterations), ("games", games)) if v is not None}
    if not change:
        return config
    return replace(config, ppo=replace(config.ppo, **change), alphazero=replace(config.alphazero, **change))


def snapshot_name(generation: int) -> str:
    return f"gen{generation}"


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
        _atomic_write(self.root / f"{snapshot_name(checkpoint.generation)}.metrics.json", json.dumps(metrics))

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
        _atomic_write(self.root / "matches.jsonl", "\n".join(lines) + "\n")


def _atomic_write(path: Path, text: str) -> None:
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
    """The learner's opponents for `generation`: both bots, the best snapshots so far, itself;
    only itself when the AlphaZero-style learner trains it."""
    if config.learner(generation) == "alphazero":
        return ["self"]
    fit = fit_ratings(store.results())
    snaps = [m for m in members(store, generation - 1) if m not in BOT_NAMES]
    ratings = fit.ratings if fit else {}
    best = sorted(snaps, key=lambda m: (-ratings.get(m, float("-inf")), m))[: config.top_snapshots]
    return list(BOT_NAMES) + best + ["self"]


def load_member(store: LeagueStore, name: str, config: LeagueConfig, greedy: bool = True) -> Player:
    if name in BOTS:
        return BOTS[name]()
    if name.startswith("gen") and name[3:].isdigit():
        ckpt = store.snapshot(int(name[3:]))
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
