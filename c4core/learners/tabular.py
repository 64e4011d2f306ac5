"""Tabular learners: Q-learning and SARSA over a dense table of every position of a small game.

A game small enough to enumerate (Connect-3 on 4x4 has 23,930 positions still in play) gets a
`PositionIndex` (`c4core.evaluation.positions`): the sorted keys (`State.key`) of every reachable
position that is not over, so a key's rank among them is a perfect hash, and a table is a dense
float32 array with one row per position and one column per action. One table serves both seats: each
row holds the action values of whoever moves there, from that player's side (C3RL's layout).

`train_table` fits a table by self-play, many games stepped at once through the game's batched
state. Its targets take the sign of the bootstrap from whose turn the next position is, never
from alternation: where a player who completes a box moves again (Dots and Boxes) the next
value is the mover's own. Q-learning bootstraps from the best legal action there, SARSA from
the action actually taken, and both mask illegal actions when choosing and in the target.

A table is a league snapshot like a network: `TablePlayer` plays it, and `QTable.evaluate`
gives move probabilities and values in the shape serving expects of a network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from c4core.config import TABULAR_LEARNERS, TabularConfig
from c4core.evaluation.positions import PositionIndex, position_index
from c4core.games.base import BatchState, Game
from c4core.games.players import Player


def _masked(q: np.ndarray, legal: np.ndarray) -> np.ndarray:
    return np.where(legal, q, -np.inf)


class QTable:
    """A table of action values over a game's `PositionIndex`, with the evaluation interface of
    a policy-value network: the greedy move's probability and the position's value."""

    def __init__(self, game: Game, q: np.ndarray | None = None):
        self.game = game
        self.index = position_index(game)
        shape = (len(self.index), game.num_actions)
        self.q = np.zeros(shape, np.float32) if q is None else np.asarray(q, np.float32)
        if self.q.shape != shape:
            raise ValueError(f"a table of {game.title} has shape {shape}, got {self.q.shape}")

    def values(self, batch: BatchState) -> tuple[np.ndarray, np.ndarray]:
        """The action values of every game of `batch` still in play ([n, actions], -inf on
        illegal actions and on finished games' rows) and its legal mask."""
        legal = batch.legal().cpu().numpy()
        live = ~batch.done.cpu().numpy()
        out = np.full(legal.shape, -np.inf, np.float32)
        if live.any():
            rows = self.index.rows(batch.keys()[torch.from_numpy(live).to(batch.device)])
            out[live] = _masked(self.q[rows], legal[live])
        return out, legal

    def evaluate(self, batch: BatchState) -> tuple[torch.Tensor, torch.Tensor]:
        """Move probabilities [n, actions], shared evenly by the best legal actions, and the best
        action's value [n] for the side to move (0 for finished games)."""
        q, legal = self.values(batch)
        best = (q == q.max(1, keepdims=True)) & legal
        probs = best / np.maximum(best.sum(1, keepdims=True), 1)
        value = np.where(legal.any(1), q.max(1), 0.0)
        return torch.from_numpy(probs.astype(np.float32)), torch.from_numpy(value.astype(np.float32))


class TablePlayer(Player):
    """Plays a table: its best legal action (the lowest of equals), or with probability `epsilon`
    a uniformly random legal one."""

    def __init__(self, table: QTable, name: str = "table", greedy: bool = True, epsilon: float = 0.1):
        self.table, self.name = table, name
        self.epsilon = 0.0 if greedy else epsilon

    def policy(self, boards: BatchState) -> torch.Tensor:
        """The best action (the lowest of equals) with 1 - `epsilon`, plus `epsilon` spread over the
        legal actions."""
        q, legal = self.table.values(boards)
        best = np.zeros(legal.shape)
        best[np.arange(len(q)), q.argmax(1)] = 1.0
        uniform = legal / np.maximum(legal.sum(1, keepdims=True), 1)
        return torch.from_numpy(
            np.where(legal.any(1, keepdims=True), (1 - self.epsilon) * best, 0.0) + self.epsilon * uniform
        )

    def act(self, boards: BatchState, generator: torch.Generator | None = None) -> torch.Tensor:
        q, legal = self.table.values(boards)
        actions = torch.from_numpy(np.where(legal.any(1), q.argmax(1), 0))
        if self.epsilon > 0:
            n = len(actions)
            explore = torch.rand(n, generator=generator) < self.epsilon
            uniform = torch.from_numpy(legal.astype(np.float32)).clamp_min(1e-9)  # finished rows: any
            random = torch.multinomial(uniform, 1, generator=generator).squeeze(1)
            actions = torch.where(explore, random, actions)
        return actions.to(boards.device)


def epsilon_at(config: TabularConfig, game_number: np.ndarray) -> np.ndarray:
    """C3RL's exploration schedule: ε = max(ε_min, ε_start (1 - g / G)) for game g, G being
    `TabularConfig.schedule_games`."""
    return np.maximum(config.epsilon_min, config.epsilon_start * (1.0 - game_number / config.schedule_games))


def train_table(
    table: QTable,
    config: TabularConfig,
    method: str,
    seed: int,
    first_game: int,
    record: Callable[[int, dict[str, float]], None] | None = None,
) -> None:
    """Fit `table` in place by `config.games` games of self-play with `method` (``"q-learning"``
    or ``"sarsa"``), `config.parallel` at a time, games numbered from `first_game` in the exploration
    schedule (`epsilon_at`); `record(i, metrics)` after each of `config.iterations`."""
    if method not in TABULAR_LEARNERS:
        raise ValueError(f"unknown tabular learner {method!r}: choose from {', '.join(TABULAR_LEARNERS)}")
    rng = np.random.default_rng(seed)
    per_iteration = config.games
    for i in range(config.iterations):
        stats = _Stats()
        played = 0
        while played < per_iteration:
            n = min(config.parallel, per_iteration - played)
            numbers = first_game + i * per_iteration + played + np.arange(n)
            _self_play(table, config, method, epsilon_at(config, numbers), rng, stats)
            played += n
        if record is not None:
            record(i, stats.metrics(table, epsilon_at(config, numbers[-1:])[0]))


@dataclass
class _Stats:
    games: int = 0
    first_wins: int = 0
    draws: int = 0
    updates: int = 0
    td: float = 0.0

    def metrics(self, table: QTable, epsilon: float) -> dict[str, float]:
        return {
            "games": float(self.games),
            "epsilon": float(epsilon),
            "td_error": self.td / max(self.updates, 1),
            "first_player_win": self.first_wins / max(self.games, 1),
            "draw": self.draws / max(self.games, 1),
            "visited": float((table.q != 0).any(1).mean()),
        }


def _self_play(
    table: QTable,
    config: TabularConfig,
    method: str,
    epsilon: np.ndarray,
    rng: np.random.Generator,
    stats: _Stats,
) -> None:
    """One batch of self-play games, each updating the table as it goes."""
    n = len(epsilon)
    batch = table.game.new_batch(n)
    q, index = table.q, table.index
    pending = np.zeros(n, bool)  # SARSA: a move whose target waits for the next action
    p_row, p_action, p_mover = (np.zeros(n, np.int64) for _ in range(3))
    # read once per step: a move's target and the next move's choice see the same positions
    done, legal_now, rows_now, mover_now = _positions(batch, index)
    while not done.all():
        games = np.flatnonzero(~done)
        legal, rows, mover = legal_now[games], rows_now[games], mover_now[games]
        values = _masked(q[rows], legal)
        greedy = values.argmax(1)
        uniform = (rng.random(legal.shape) * legal).argmax(1)  # a random legal action
        action = np.where(rng.random(len(games)) < epsilon[games], uniform, greedy)
        if method == "sarsa":  # the previous move of each game bootstraps from this one
            waiting = pending[games]
            g = games[waiting]
            sign = np.where(mover[waiting] == p_mover[g], 1.0, -1.0)
            target = sign * config.gamma * q[rows[waiting], action[waiting]]
            stats.td += _update(q, p_row[g], p_action[g], target, config.alpha)
            stats.updates += len(g)
        full = np.zeros(n, np.int64)
        full[games] = action
        batch.play(torch.from_numpy(full), torch.from_numpy(~done))
        done, legal_now, rows_now, mover_now = _positions(batch, index)
        ended = done[games]
        reward = batch.returns().numpy()[games, mover]
        if method == "q-learning":
            target = reward.astype(np.float64)
            on = ~ended
            if on.any():
                nxt = games[on]
                best = _masked(q[rows_now[nxt]], legal_now[nxt]).max(1)
                sign = np.where(mover_now[nxt] == mover[on], 1.0, -1.0)
                target[on] = sign * config.gamma * best
            stats.td += _update(q, rows, action, target, config.alpha)
            stats.updates += len(games)
        else:
            stats.td += _update(q, rows[ended], action[ended], reward[ended], config.alpha)
            stats.updates += int(ended.sum())
            pending[games] = ~ended
            p_row[games], p_action[games], p_mover[games] = rows, action, mover
    first = batch.returns().numpy()[:, 0]
    stats.games += n
    stats.first_wins += int((first > 0).sum())
    stats.draws += int((first == 0).sum())


def _positions(batch: BatchState, index: PositionIndex) -> tuple[np.ndarray, ...]:
    """Each game's finished flag, legal mask, table row (-1 once finished) and player to move."""
    done = batch.done.numpy().copy()
    rows = np.full(len(done), -1, np.int64)
    rows[~done] = index.rows(batch.keys().numpy()[~done])
    return done, batch.legal().numpy(), rows, batch.to_move().numpy()


def _update(q: np.ndarray, rows: np.ndarray, actions: np.ndarray, target: np.ndarray, alpha: float) -> float:
    """Move each (row, action) `alpha` of the way to its target, the targets of one pair in this
    step averaged (many games of a batch share the opening positions); the summed |TD error|."""
    if not len(rows):
        return 0.0
    flat = rows * q.shape[1] + actions
    error = target - q.reshape(-1)[flat]
    pairs, which = np.unique(flat, return_inverse=True)  # a few per game, not the whole table
    total = np.bincount(which, error)
    count = np.bincount(which)
    q.reshape(-1)[pairs] += (alpha * total / count).astype(np.float32)
    return float(np.abs(error).sum())
