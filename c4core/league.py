"""The league: members, results, `pick_opponents`, and the generation step everything calls.

Members are the two scripted bots plus one frozen snapshot per generation and role (``gen1``,
``gen2``, ... for the main agent; ``gen2-me`` and ``gen2-le`` for its exploiters). A generation
trains every role's learner at once, each in a process of its own (`train_learners`); which
learner trains a role is the config's to say, and `c4core.learners` holds them all:

- the **main agent**, continuing from its previous snapshot: PPO against the bots, three
  snapshots and itself (the highest-rated, or drawn by prioritized fictitious self-play,
  `pfsp_weights`), or, from generation `alphazero_from` on, the AlphaZero-style learner against
  itself with search, a `league_share` of its games against members drawn by PFSP; or a tabular
  learner (`main_learner`) by self-play;
- the **main exploiter** (AlphaStar's), by PPO against the current champion only. It starts
  from `exploiter_base` and starts again once it beats the champion it trained on in
  `exploiter_reset_score` of its games, or after `exploiter_reset_generations` generations
  (`main_exploiter_start`);
- the **league exploiter**, by PPO against the whole league drawn by PFSP.

Every new snapshot then plays every member and every other new snapshot, and one joint Elo fit
over all recorded results rates everyone, whichever learner made it. The champion is the
best-rated main-agent snapshot: an exploiter is a teacher and a probe, never the champion.
How much the main exploiter beats the champion it trained on is the champion's
`exploitability`.

A learner can also train data-parallel on several processes (`PPOConfig.ranks`,
`AlphaZeroConfig.ranks`; `c4core.ranks`), which puts both cores on one learner where the roles
would leave one idle.

The league's state lives behind `LeagueStore`, so the same steps run on a local folder (here)
or on MLflow (`c4core.registry`), and every step is idempotent: a snapshot or match that the
store already holds is reused, never redone, which is what makes a killed league resumable. The
config and the profiles live in `c4core.config`.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import distributed

from c4core.bots import BOTS, Player
from c4core.config import MAIN, LeagueConfig, generation_of, role_of, snapshot_name
from c4core.elo import EloFit, fit_elo
from c4core.learners import LEARNERS, TrainingJob
from c4core.match import WDL, MatchResult, head_to_head, play_match
from c4core.net import Checkpoint
from c4core.ranks import ALONE, RANK_TIMEOUT, Ranks, joined, rendezvous


class LeagueStore(Protocol):
    """Where a league keeps its snapshots and match records. A store is picklable, and its
    copy in another process sees the same league: the learners train in processes of their own."""

    def snapshot(self, generation: int, role: str = MAIN) -> Checkpoint | None:
        """`role`'s snapshot of `generation`, if it exists."""

    def save_snapshot(self, checkpoint: Checkpoint, metrics: list[dict[str, float]]) -> None:
        """Store a snapshot (of `checkpoint.role`) atomically, with its training metrics per
        iteration."""

    def log_iteration(
        self, generation: int, iteration: int, metrics: Mapping[str, float], role: str = MAIN
    ) -> None:
        """Record one training iteration's metrics as it finishes (a store may keep them only
        with the snapshot)."""

    def results(self) -> list[MatchResult]:
        """Every recorded match."""

    def record_match(self, result: MatchResult) -> None:
        """Record a match; recording the same pairing twice must not double-count."""


class LocalStore:
    """A league kept in a folder: ``gen<g>.pt`` snapshots and ``matches.jsonl``."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def snapshot(self, generation: int, role: str = MAIN) -> Checkpoint | None:
        path = self.root / f"{snapshot_name(generation, role)}.pt"
        return Checkpoint.load(path) if path.exists() else None

    def save_snapshot(self, checkpoint: Checkpoint, metrics: list[dict[str, float]]) -> None:
        name = snapshot_name(checkpoint.generation, checkpoint.role)
        # the metrics first: the checkpoint's presence is what marks the snapshot done
        atomic_write(self.root / f"{name}.metrics.json", json.dumps(metrics))
        checkpoint.save(self.root / f"{name}.pt")

    def log_iteration(
        self, generation: int, iteration: int, metrics: Mapping[str, float], role: str = MAIN
    ) -> None:
        """Nothing: a folder keeps the metrics with the snapshot (`save_snapshot`)."""

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
def members(store: LeagueStore, config: LeagueConfig, generations: int) -> list[str]:
    """Bots first, then every role's snapshot that exists up to `generations`, by generation."""
    snaps = [
        snapshot_name(g, role)
        for g in range(1, generations + 1)
        for role in config.roles_at(g)
        if store.snapshot(g, role) is not None
    ]
    return list(config.bots) + snaps


def new_pairs(store: LeagueStore, config: LeagueConfig, generation: int) -> list[tuple[str, str]]:
    """The matches `generation` adds: each of its new snapshots against every earlier member,
    then the new snapshots against each other."""
    new = [snapshot_name(generation, role) for role in config.roles_at(generation)]
    old = members(store, config, generation - 1)
    return [(a, b) for a in new for b in old] + [(a, b) for i, a in enumerate(new) for b in new[i + 1 :]]


def fit_ratings(results: Iterable[MatchResult]) -> EloFit | None:
    records = [r.to_record() for r in results]
    return fit_elo(records) if records else None


def results_upto(results: Iterable[MatchResult], generation: int) -> list[MatchResult]:
    """The records among the bots and snapshots up to `generation`: what the league knew when
    that generation ended, whatever later generations have played since."""

    def known(name: str) -> bool:
        g = generation_of(name)
        return g is None or g <= generation  # a bot, or a snapshot by then

    return [r for r in results if known(r.a) and known(r.b)]


def champion_after(results: Iterable[MatchResult], generation: int) -> str | None:
    """The champion once `generation` had played: the best-rated main-agent snapshot then."""
    fit = fit_ratings(results_upto(results, generation))
    mains = [m for m in fit.ratings if role_of(m) == MAIN] if fit else []
    return champion(fit) if fit and mains else None


def pick_opponents(store: LeagueStore, config: LeagueConfig, generation: int, role: str = MAIN) -> list[str]:
    """`role`'s opponents in `generation`.

    - The main agent by PPO: the game's bots (`LeagueConfig.bots`), `top_snapshots` snapshots
      so far (the best-rated, or drawn by PFSP: `opponent_sampling`), and itself. By
      AlphaZero: itself, and with a `league_share`, `top_snapshots` snapshots drawn by PFSP.
    - The main exploiter: the champion, only.
    - The league exploiter: `top_snapshots` members of the whole league drawn by PFSP.
    """
    results = results_upto(store.results(), generation - 1)
    league = members(store, config, generation - 1)
    snaps = [m for m in league if m not in config.bots]
    if role == "main-exploiter":
        target = champion_after(results, generation - 1)
        if target is None:
            raise ValueError(f"generation {generation}: no champion yet for a main exploiter to train on")
        return [target]
    if role == "league-exploiter":
        return _pfsp_pick(results, config, generation, role, league)
    if LEARNERS[config.learner(generation)].self_play:
        return ["self"]
    if config.learner(generation) == "alphazero":
        share = config.alphazero.league_share
        return ["self"] + (_pfsp_pick(results, config, generation, role, snaps) if share else [])
    if config.opponent_sampling == "pfsp":
        picked = _pfsp_pick(results, config, generation, role, snaps)
    else:
        fit = fit_ratings(results)
        ratings = fit.ratings if fit else {}
        picked = sorted(snaps, key=lambda m: (-ratings.get(m, float("-inf")), m))[: config.top_snapshots]
    return list(config.bots) + picked + ["self"]


def _pfsp_pick(
    results: list[MatchResult], config: LeagueConfig, generation: int, role: str, candidates: list[str]
) -> list[str]:
    """`top_snapshots` of `candidates` drawn by PFSP for `role`'s learner, scored from the
    records of the snapshot it starts from (its previous one)."""
    learner = snapshot_name(generation - 1, role)
    scores = {}
    for m in candidates:
        wdl = head_to_head(results, learner, m) if m != learner else None
        scores[m] = wdl.score if wdl is not None and wdl.games else None
    rng = np.random.default_rng(_seed(config, generation, "pfsp" if role == MAIN else f"pfsp:{role}"))
    return weighted_sample(pfsp_weights(scores, config.pfsp_prior), config.top_snapshots, rng)


def main_exploiter_start(results: Iterable[MatchResult], config: LeagueConfig, generation: int) -> int:
    """The generation in which the main exploiter training in `generation` last started from
    `exploiter_base`. It starts in generation 2 and again in any generation h after its last
    snapshot (h - 1's) scored at least `exploiter_reset_score` against the champion it trained
    on, or once `exploiter_reset_generations` generations have passed since it started."""
    results = list(results)
    start = 2
    for h in range(3, generation + 1):
        wdl = _exploiter_record(results, h - 1)
        beaten = wdl is not None and wdl.games > 0 and wdl.score >= config.exploiter_reset_score
        if beaten or h - start >= config.exploiter_reset_generations:
            start = h
    return start


def _exploiter_record(results: list[MatchResult], generation: int) -> WDL | None:
    """The W/D/L of `generation`'s main exploiter against the champion it trained on."""
    target = champion_after(results, generation - 1)
    if target is None:
        return None
    return head_to_head(results, snapshot_name(generation, "main-exploiter"), target)


def exploitability(results: Iterable[MatchResult], generation: int) -> float | None:
    """How far `generation`'s main exploiter beat the champion it trained on: its score against
    it in their league match (a draw counts half); None before the match."""
    wdl = _exploiter_record(list(results), generation)
    return wdl.score if wdl is not None and wdl.games else None


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


BEAT_SCORE = 0.55
"""The training score against a champion at which the main exploiter counts as beating it
(`iterations_to_beat`), the bar AlphaZero's gate set for a new network."""


def iterations_to_beat(
    results: Iterable[MatchResult],
    config: LeagueConfig,
    metrics: Mapping[int, list[dict[str, float]]],
    upto: int,
    threshold: float = BEAT_SCORE,
) -> list[dict[str, Any]]:
    """For each champion in turn that the main exploiter trained on up to generation `upto`: the
    generation it first did (``from_generation``), the iterations it trained on it
    (``trained``), and after how many of them its score in the training games against it (wins,
    draws half) first reached `threshold` (``iterations``; None: not yet). `metrics` holds the
    main exploiter's per-iteration metrics by generation."""
    results = list(results)
    rows: list[dict[str, Any]] = []
    for g in range(2, upto + 1):
        if "main-exploiter" not in config.roles_at(g):
            continue
        target = champion_after(results, g - 1)
        if not rows or rows[-1]["champion"] != target:
            rows.append({"champion": target, "from_generation": g, "trained": 0, "iterations": None})
        row = rows[-1]
        for m in metrics.get(g, []):
            row["trained"] += 1
            score = m.get(f"vs/{target}/win", 0.0) + m.get(f"vs/{target}/draw", 0.0) / 2
            if row["iterations"] is None and score >= threshold:
                row["iterations"] = row["trained"]
    return rows


def load_member(store: LeagueStore, name: str, config: LeagueConfig, greedy: bool = True) -> Player:
    if name in BOTS:
        return BOTS[name]()
    generation, role = generation_of(name), role_of(name)
    if generation is not None and role is not None:
        ckpt = store.snapshot(generation, role)
        if ckpt is not None:
            return ckpt.player(name, greedy, config.device)
    raise ValueError(f"league {config.name!r} has no member {name!r}")


def starting_point(store: LeagueStore, config: LeagueConfig, generation: int, role: str = MAIN) -> str | None:
    """The snapshot `role`'s learner starts `generation` from (None: a fresh network). The main
    agent and the league exploiter continue from their previous snapshot; the main exploiter
    too, unless it starts again (`main_exploiter_start`) from `exploiter_base` (a fresh network
    where the main agent is a table)."""
    if role == MAIN:
        return snapshot_name(generation - 1) if generation > 1 else None
    restart = generation == 2 or (
        role == "main-exploiter" and main_exploiter_start(store.results(), config, generation) == generation
    )
    if not restart:
        return snapshot_name(generation - 1, role)
    # an exploiter learns by PPO, so it can only start from a network
    first = config.exploiter_base == "first" and LEARNERS[config.learner(1)].kind == "net"
    return snapshot_name(1) if first else None


def train_generation(
    store: LeagueStore,
    config: LeagueConfig,
    generation: int,
    opponents: list[str],
    on_iteration: Callable[[int, dict[str, float]], None] | None = None,
    role: str = MAIN,
) -> Checkpoint:
    """Train `role`'s snapshot of `generation` (reusing it if the store has it) and store it;
    each iteration's metrics go to `store.log_iteration` as it ends. A learner on more than one
    rank (`LeagueConfig.ranks`) trains here as rank 0, its other ranks in processes of their own
    (`_learner_ranks`); only rank 0 records."""
    existing = store.snapshot(generation, role)
    if existing is not None:
        return existing
    metrics: list[dict[str, float]] = []

    def record(i: int, m: dict[str, float]) -> None:
        metrics.append(m)
        store.log_iteration(generation, i, m, role)
        if on_iteration is not None:
            on_iteration(i, m)

    # the other ranks set their learner up beside this one, not after it
    ranked = None
    if config.ranks(generation, role) > 1:
        ranked = _learner_ranks(store, config, generation, opponents, role)
    with ranked or nullcontext(ALONE) as ranks:
        ckpt = _train(store, config, generation, opponents, role, ranks, record)
    store.save_snapshot(ckpt, metrics)
    return ckpt


def _train(
    store: LeagueStore,
    config: LeagueConfig,
    generation: int,
    opponents: list[str],
    role: str,
    ranks: Ranks,
    record: Callable[[int, dict[str, float]], None] | None,
) -> Checkpoint:
    """`role`'s snapshot of `generation`, trained as rank `ranks.rank` by its learner
    (`c4core.learners.LEARNERS`), from its `starting_point` and with the league's seeds: the
    same on every rank, which is what keeps the ranks' replicas equal. `record` follows its
    iterations."""
    tag = "" if role == MAIN else f":{role}"  # the main agent's seeds are those from before roles
    start = starting_point(store, config, generation, role)
    job = TrainingJob(
        config,
        generation,
        role,
        start=load_snapshot(store, start) if start is not None else None,
        opponents=opponents,
        load=lambda member: load_member(store, member, config, greedy=False),
        init_seed=_seed(config, generation, "init" + tag),
        seed=_seed(config, generation, "train" + tag),
        record=record,
        ranks=ranks,
    )
    return LEARNERS[config.learner(generation, role)].train(job)


@contextmanager
def _learner_ranks(
    store: LeagueStore, config: LeagueConfig, generation: int, opponents: list[str], role: str
) -> Iterator[Ranks]:
    """torch.distributed's process group for one data-parallel learner (`c4core.ranks.joined`):
    this process is rank 0, and ranks 1.. are this process's rank servers (`_rank_servers`),
    each setting up the same learner (`_rank`). A rank that fails ends the group, and its
    error is raised here; the group's servers are then retired, the others kept for the next
    learner."""
    if distributed.is_initialized():
        raise RuntimeError("a learner with ranks needs a process without a torch.distributed group")
    world = config.ranks(generation, role)
    meeting = rendezvous(world)
    servers = _rank_servers(world - 1)
    member = snapshot_name(generation, role)
    for rank, server in enumerate(servers, start=1):
        server.process.name = f"{member}-rank{rank}"
        server.conn.send((store, config, generation, opponents, role, meeting.port, rank))
    try:
        with joined(meeting.port, 0, world) as ranks:
            yield ranks
    except BaseException as e:
        failed = _rank_replies(servers, 30.0) if isinstance(e, Exception) else ""
        _retire(servers)  # mid-learner, or waiting on a group that is gone
        if failed:
            raise RuntimeError(f"learner {member}: {failed}") from e
        raise
    failed = _rank_replies(servers, RANK_TIMEOUT.total_seconds())
    if failed:
        _retire(servers)
        raise RuntimeError(f"learner {member}: {failed}")


@dataclass
class _RankServer:
    """A spawned process that serves as rank 1.. of this process's data-parallel learners,
    one learner after another (`_serve_ranks`), and the pipe that gives it each learner."""

    process: Any
    conn: Any
    owner: int = field(default_factory=os.getpid)
    """The process that spawned it: a fork of that process (an executor's task) has none."""


_SERVERS: list[_RankServer] = []
"""This process's rank servers, kept from one learner to the next: spawning a rank afresh for
every generation re-imported torch and the league in it, 2.5-3.6 s in which rank 0 waited and
a core idled (docs/BENCHMARKS.md). They die with this process."""

IDLE_RANK = "c4-idle-rank"
"""The process name (Linux's comm) of a rank server waiting for its next learner: what
`benchmarks/bench_cores.py` tells from a training rank."""


def _rank_servers(n: int) -> list[_RankServer]:
    """`n` live rank servers, spawning those missing."""
    _SERVERS[:] = [s for s in _SERVERS if s.owner == os.getpid() and s.process.is_alive()]
    ctx = multiprocessing.get_context("spawn")
    while len(_SERVERS) < n:
        conn, child = ctx.Pipe()
        # daemonic: at this process's exit, multiprocessing stops it instead of waiting for it
        process = ctx.Process(target=_serve_ranks, args=(child,), name="ppo-rank", daemon=True)
        process.start()
        child.close()
        _SERVERS.append(_RankServer(process, conn))
    return _SERVERS[:n]


def _rank_replies(servers: list[_RankServer], timeout: float) -> str:
    """What `servers` said when their learner ended: empty if each finished, else what each
    failed rank said (or how it died), each given up to `timeout` seconds to answer."""
    said = {}
    for rank, server in enumerate(servers, start=1):
        try:
            message = server.conn.recv() if server.conn.poll(timeout) else "it did not answer"
        except (EOFError, OSError):
            server.process.join(timeout=5)
            message = f"its process died (exit code {server.process.exitcode})"
        if message is not None:
            said[rank] = message
    return "; ".join(f"rank {r} failed: {m}" for r, m in sorted(said.items()))


def _retire(servers: list[_RankServer]) -> None:
    """Stop `servers`, whose group failed: the next learner spawns fresh ones."""
    for server in servers:
        server.process.kill()
        server.process.join()
        server.conn.close()
        if server in _SERVERS:
            _SERVERS.remove(server)


def _serve_ranks(conn: Any) -> None:
    """A rank server's life: on one torch thread, train each learner rank 0 sends as its rank
    (`_rank`) and answer None, or the error, after which it leaves; it leaves too when rank
    0's process is gone."""
    _die_with_parent()
    torch.set_num_threads(1)
    while True:
        _name_process(IDLE_RANK)
        try:
            job = conn.recv()
        except EOFError:
            return
        store, config, generation, opponents, role, port, rank = job
        _name_process(f"{snapshot_name(generation, role)}-rank{rank}")
        try:
            _rank(store, config, generation, opponents, role, port, rank)
        except Exception as e:  # rank 0 raises it, with the learner's name
            conn.send(f"{type(e).__name__}: {e}")
            return
        conn.send(None)


def _rank(
    store: LeagueStore,
    config: LeagueConfig,
    generation: int,
    opponents: list[str],
    role: str,
    port: int,
    rank: int,
) -> None:
    """Rank `rank` (1 or more) of a data-parallel learner: it trains the same learner as rank 0
    on its own share of the games, and records nothing."""
    with joined(port, rank, config.ranks(generation, role)) as ranks:
        _train(store, config, generation, opponents, role, ranks, None)


def load_snapshot(store: LeagueStore, member: str) -> Checkpoint:
    """The checkpoint of snapshot `member`; a ValueError if the store has none."""
    generation, role = generation_of(member), role_of(member)
    ckpt = store.snapshot(generation, role) if generation is not None and role is not None else None
    if ckpt is None:
        raise ValueError(f"the league has no snapshot {member!r}")
    return ckpt


def train_learners(
    store: LeagueStore,
    config: LeagueConfig,
    generation: int,
    plan: Mapping[str, list[str]],
    on_iteration: Callable[[str, int, dict[str, float]], None] | None = None,
) -> dict[str, Checkpoint]:
    """Train every role of `plan` (role -> its opponents) for `generation`, reusing what the store
    holds, and return each role's snapshot. With more than one to train and `processes` not 1,
    each learner trains in a process of its own with one torch thread (small forwards scale
    badly across threads, docs/BENCHMARKS.md), at most `processes` at once (0: one per core).
    A learner on more than one rank (`LeagueConfig.ranks`) adds its other ranks' processes to that.
    `on_iteration(member, i, metrics)` is called here, in this process, for every learner."""
    todo = [role for role in plan if store.snapshot(generation, role) is None]
    workers = config.processes or min(len(todo), os.cpu_count() or 1)
    if len(todo) > 1 and workers > 1:
        _train_in_processes(store, config, generation, {r: plan[r] for r in todo}, on_iteration, workers)
    else:
        for role in todo:
            name = snapshot_name(generation, role)
            cb = (lambda i, m, name=name: on_iteration(name, i, m)) if on_iteration else None
            train_generation(store, config, generation, plan[role], cb, role)
    return {role: load_snapshot(store, snapshot_name(generation, role)) for role in plan}


def _train_in_processes(
    store: LeagueStore,
    config: LeagueConfig,
    generation: int,
    plan: Mapping[str, list[str]],
    on_iteration: Callable[[str, int, dict[str, float]], None] | None,
    workers: int,
) -> None:
    """`train_learners`' processes: spawned (a fork would copy this process's torch threads and
    any open MLflow connection), each reporting its iterations through one queue. A learner that
    fails lets the others finish, so that a rerun has less to redo, then raises."""
    ctx = multiprocessing.get_context("spawn")
    events = ctx.Queue()
    waiting = list(plan)
    running: dict[str, Any] = {}
    finished: set[str] = set()
    errors: dict[str, str] = {}
    while waiting or running:
        while waiting and len(running) < workers:
            role = waiting.pop(0)
            args = (store, config, generation, role, plan[role], events)
            running[role] = ctx.Process(target=_learner, args=args, name=snapshot_name(generation, role))
            running[role].start()
        try:
            kind, role, payload = events.get(timeout=1.0)
        except queue.Empty:
            for role, proc in list(running.items()):  # a learner killed without a word
                if not proc.is_alive() and role not in finished:
                    proc.join()
                    errors[role] = f"its process died (exit code {proc.exitcode})"
                    running.pop(role)
            continue
        if kind == "iteration" and on_iteration is not None:
            on_iteration(snapshot_name(generation, role), *payload)
        elif kind in ("done", "error"):
            finished.add(role)
            if kind == "error":
                errors[role] = payload
            running.pop(role).join()
    if errors:
        raise RuntimeError(
            "; ".join(
                f"learner {snapshot_name(generation, r)} failed: {e}" for r, e in sorted(errors.items())
            )
        )


def _learner(
    store: LeagueStore, config: LeagueConfig, generation: int, role: str, opponents: list[str], events: Any
) -> None:
    """One learner process: `train_generation` on one torch thread, its iterations sent back."""
    _die_with_parent()
    torch.set_num_threads(1)
    try:
        train_generation(
            store, config, generation, opponents, lambda i, m: events.put(("iteration", role, (i, m))), role
        )
    except Exception as e:  # reported to the parent, which raises it with the other learners'
        events.put(("error", role, f"{type(e).__name__}: {e}"))
        return
    events.put(("done", role, None))


def _name_process(name: str) -> None:
    """Set this process's name as `ps` and psutil show it (Linux's comm, at most 15 bytes)."""
    _prctl(15, name.encode()[:15])  # PR_SET_NAME


def _die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies, so a killed league leaves no
    learner writing behind it."""
    import signal

    _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _prctl(option: int, arg: Any) -> None:
    """Linux's prctl(2); elsewhere, nothing."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, arg)
    except (OSError, AttributeError):
        pass


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
        game=config.board,
        device=config.device,
    )
    store.record_match(result)
    return result


@dataclass(frozen=True)
class GenerationReport:
    """What one generation produced."""

    generation: int
    opponents: list[str]
    """The main agent's opponents."""
    matches: list[MatchResult]
    fit: EloFit
    champion: str
    seconds: float
    exploiters: dict[str, list[str]] = field(default_factory=dict)
    """Each exploiter role that trained, and its opponents."""


def champion(fit: EloFit) -> str:
    """The best-rated main-agent snapshot (an exploiter, however rated, is never champion)."""
    mains = [m for m in fit.ratings if role_of(m) == MAIN]
    if not mains:
        raise ValueError("the league has no main-agent snapshots yet")
    return max(mains, key=lambda m: (fit.ratings[m], m))


def plan_generation(store: LeagueStore, config: LeagueConfig, generation: int) -> dict[str, list[str]]:
    """Each role training in `generation`, with its opponents (`pick_opponents`)."""
    return {role: pick_opponents(store, config, generation, role) for role in config.roles_at(generation)}


def run_generation(
    store: LeagueStore,
    config: LeagueConfig,
    generation: int,
    on_iteration: Callable[[str, int, dict[str, float]], None] | None = None,
) -> GenerationReport:
    """One generation: pick opponents, train every role at once, play every new pairing, refit.
    The single source of truth that the CLI and the DAG both call (the DAG calls the same steps
    one task each). `on_iteration(member, i, metrics)` follows every learner."""
    start = time.perf_counter()
    plan = plan_generation(store, config, generation)
    train_learners(store, config, generation, plan, on_iteration)
    matches = [play_league_match(store, config, a, b) for a, b in new_pairs(store, config, generation)]
    fit = fit_ratings(store.results())
    assert fit is not None  # the new snapshot has just played
    exploiters = {role: opp for role, opp in plan.items() if role != MAIN}
    return GenerationReport(
        generation, plan[MAIN], matches, fit, champion(fit), time.perf_counter() - start, exploiters
    )


def run_league(
    store: LeagueStore,
    config: LeagueConfig,
    on_generation: Callable[[GenerationReport], None] | None = None,
    on_iteration: Callable[[str, int, dict[str, float]], None] | None = None,
) -> GenerationReport:
    """Run every generation in order (resuming whatever the store already holds);
    `on_iteration(member, i, metrics)` follows every learner."""
    report = None
    for g in range(1, config.generations + 1):
        report = run_generation(store, config, g, on_iteration)
        if on_generation is not None:
            on_generation(report)
    assert report is not None
    return report


def _seed(config: LeagueConfig, generation: int, purpose: str) -> int:
    return zlib.crc32(f"{config.seed}:{config.training_hash()}:{generation}:{purpose}".encode())
