"""Learners as plug-ins: what the league asks of a learner, and the learners it knows.

A learner trains one role's snapshot of one generation (`Learner.train`): from the snapshot it
continues (or from nothing), against the members the league picked, with the league's seeds, and
returns the new snapshot as a `Checkpoint`, which the league then stores, matches, rates and
registers whatever made it. The league never names a learner: the config says which trains a
snapshot (`LeagueConfig.learner`), and `LEARNERS` maps that name to the learner, so a new learner
is one entry here and its config.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch

from c4core.config import LeagueConfig
from c4core.games import held_out
from c4core.games.players import Player
from c4core.learners.alphazero import train as train_alphazero
from c4core.learners.net import Checkpoint, NetPlayer, PolicyValueNet, fitted_optimizer_state
from c4core.learners.ppo import train as train_ppo
from c4core.learners.ranks import Ranks
from c4core.learners.tabular import QTable, train_table


@dataclass(frozen=True)
class TrainingJob:
    """Everything one learner needs to train one snapshot."""

    config: LeagueConfig
    generation: int
    role: str
    start: Checkpoint | None
    """The snapshot it continues from; None: it starts from nothing."""
    opponents: list[str]
    """The members it trains against, ``"self"`` for itself (`c4core.league.matchmaking.pick_opponents`)."""
    load: Callable[[str], Player]
    """Loads a member as a stochastic player, for training games; a learner calls it once it has
    set up its own model, so that loading never moves the model's random initialisation."""
    init_seed: int
    """Seeds the model's initialisation."""
    seed: int
    """Seeds its training games."""
    record: Callable[[int, dict[str, float]], None] | None
    """Called with each iteration's metrics as it ends (None on ranks that do not record)."""
    ranks: Ranks
    """The data-parallel group it trains in (`c4core.learners.ranks.ALONE` for one process)."""

    def players(self) -> list[Player | None]:
        """The opponents as players, None for itself."""
        return [None if o == "self" else self.load(o) for o in self.opponents]


class Learner(Protocol):
    kind: str
    """The kind of snapshot it trains (`Checkpoint.kind`): ``"net"`` or ``"table"``."""
    self_play: bool
    """Whether it learns by self-play alone, so that the league picks it no opponents."""

    def train(self, job: TrainingJob) -> Checkpoint:
        """Train `job`'s snapshot and return it (unsaved: the league stores it)."""
        ...


class NetLearner:
    """A network's learner, starting from its `TrainingJob.start`'s weights and, in the same role,
    its optimizer state; `_fit` is what each one does with them."""

    kind = "net"
    self_play = False
    name = "net"

    def train(self, job: TrainingJob) -> Checkpoint:
        config = job.config
        torch.manual_seed(job.init_seed)
        net = PolicyValueNet(config.net, config.board).to(config.device)
        optimizer = torch.optim.Adam(net.parameters(), lr=config.ppo.learning_rate)
        previous = job.start
        if previous is not None:
            if previous.kind != "net":
                raise ValueError(f"{self.name} trains a network, not a {previous.kind} ({previous.role})")
            older = net.load_snapshot(previous.model)
            # its own run goes on; a restart is fresh, and so is a net whose input has grown
            if previous.optimizer and previous.role == job.role and not older:
                optimizer.load_state_dict(fitted_optimizer_state(previous.optimizer, net))
        self._fit(net, optimizer, job)
        return Checkpoint.of(net, config.board, job.generation, optimizer, config.to_dict(), job.role)

    def _fit(self, net: PolicyValueNet, optimizer: torch.optim.Optimizer, job: TrainingJob) -> None:
        raise NotImplementedError


class PPOLearner(NetLearner):
    """PPO (`c4core.learners.ppo`) against the members picked for it."""

    name = "ppo"

    def _fit(self, net: PolicyValueNet, optimizer: torch.optim.Optimizer, job: TrainingJob) -> None:
        config = job.config
        for group in optimizer.param_groups:  # the previous generation may have been AlphaZero's
            group["lr"], group["weight_decay"] = config.ppo.learning_rate, 0.0
        # snapshots in training play stochastically, so the learner meets varied games
        players = job.players()
        train_ppo(net, config.ppo, players, job.seed, config.board, optimizer, job.record, job.ranks)


class AlphaZeroLearner(NetLearner):
    """The AlphaZero-style learner (`c4core.learners.alphazero`): searched self-play, with a share of its
    games against the network members picked for it."""

    name = "alphazero"

    def _fit(self, net: PolicyValueNet, optimizer: torch.optim.Optimizer, job: TrainingJob) -> None:
        config = job.config
        members = [(p.name, p.net) for p in job.players() if isinstance(p, NetPlayer)]
        # the suite the league scores on stays out of the positions the solver labels (rank 0's)
        labels = config.alphazero.solver_positions and job.ranks.rank == 0
        held = held_out(config.board, config.seed) if labels else None
        train_alphazero(
            net,
            config.alphazero,
            job.seed,
            config.board,
            optimizer,
            job.record,
            members,
            job.ranks,
            held_out=held,
        )


class TabularLearner:
    """Q-learning or SARSA by self-play over a table of every position (`c4core.learners.tabular`),
    continuing from its `TrainingJob.start`'s table. It trains against itself only."""

    kind = "table"
    self_play = True

    def __init__(self, method: str):
        self.method = method

    def train(self, job: TrainingJob) -> Checkpoint:
        config, t = job.config, job.config.tabular
        if job.opponents != ["self"]:
            raise ValueError(f"{self.method} learns by self-play only, not against {job.opponents}")
        previous = job.start
        if previous is not None and previous.kind != "table":
            raise ValueError(f"{self.method} trains a table, not a {previous.kind} ({previous.role})")
        table = previous.build() if previous is not None else QTable(config.board)
        assert isinstance(table, QTable)
        first_game = (job.generation - 1) * t.iterations * t.games
        train_table(table, t, self.method, job.seed, first_game, job.record)
        return Checkpoint.of_table(table, job.generation, config.to_dict(), job.role)


LEARNERS: dict[str, Learner] = {
    "ppo": PPOLearner(),
    "alphazero": AlphaZeroLearner(),
    "q-learning": TabularLearner("q-learning"),
    "sarsa": TabularLearner("sarsa"),
}
"""Every learner, by the name `LeagueConfig.learner` gives it."""
