"""The learner processes: each role's learner of a generation in a process of its own
(`train_learners`), and a data-parallel learner's other ranks in rank servers kept from one
learner to the next (`_learner_ranks`), each on one torch thread, spawned, named for `ps`, and
killed with the process that spawned them.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import distributed

from c4core.config import MAIN, LeagueConfig, snapshot_name
from c4core.league.members import load_member, load_snapshot, starting_point
from c4core.league.seeds import seed_for
from c4core.league.store import LeagueStore
from c4core.learners.net import Checkpoint
from c4core.learners.plugins import LEARNERS, TrainingJob
from c4core.learners.ranks import ALONE, RANK_TIMEOUT, Ranks, joined, rendezvous


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
    (`c4core.learners.plugins.LEARNERS`), from its `starting_point` and with the league's seeds: the
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
        init_seed=seed_for(config, generation, "init" + tag),
        seed=seed_for(config, generation, "train" + tag),
        record=record,
        ranks=ranks,
    )
    return LEARNERS[config.learner(generation, role)].train(job)


@contextmanager
def _learner_ranks(
    store: LeagueStore, config: LeagueConfig, generation: int, opponents: list[str], role: str
) -> Iterator[Ranks]:
    """torch.distributed's process group for one data-parallel learner (`c4core.learners.ranks.joined`):
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
