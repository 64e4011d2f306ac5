"""AlphaZero-style learner: self-play with search, trained on what the search found.

Expert iteration (Silver et al. 2017, "Mastering the game of Go without human knowledge";
Anthony et al. 2017, "Thinking fast and slow with deep learning and tree search"): one
iteration plays `games` self-play games in a single batch, every move chosen by `c4core.search`
with Dirichlet noise at the root, and records for every decision

- the **policy target**: the root's visit distribution (proven-lost moves removed, one-hot on
  the proof's move when the root is proven);
- the **value target**: the exact value where MCTS-Solver proved the root, else a mix of the
  game's outcome z and the search's root value q, ``(1 - q_weight) * z + q_weight * q``
  (the z/q mix of Oracle's "Lessons from AlphaZero" Connect Four study: z alone is noisy,
  q alone is biased towards the network's own view).

The network is then fitted by cross-entropy to the policy targets plus squared error to the
value targets on minibatches drawn uniformly from a **replay window** of the last
`replay_iterations` iterations, with each position's left-right mirror added (supervised
targets mirror exactly, unlike PPO's on-policy ratios). Moves are sampled in proportion to the
visits for the first `temperature_plies` plies after the random opening, then played greedily.

With `solve_from`, the exact solver (`c4core.solver`) rescores the targets as Leela Chess Zero
rescores its games with endgame tablebases: late decisions it settles cheaply get their exact
result as value target, and each game's earlier decisions take the exact result of its first
settled position as their outcome z. The openings, where the suite's hard positions are, stay
the network's to learn: the solver would need seconds to minutes a position there.

The learner plays only itself, as AlphaZero does; the league still rates every snapshot it
produces against every member, on the same ladder as the PPO snapshots.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch.nn import functional as F

from c4core.batch import Boards, mirror_planes
from c4core.bots import play_opening
from c4core.config import AlphaZeroConfig
from c4core.game import STANDARD, Geometry, Position
from c4core.match import WDL
from c4core.net import PolicyValueNet
from c4core.search import search
from c4core.solver import Solver


@dataclass(frozen=True)
class Samples:
    """Training positions (as bitboards, turned into planes per minibatch) and their targets."""

    current: torch.Tensor
    """[n] int64 stones of the side to move."""
    mask: torch.Tensor
    """[n] int64 all stones."""
    ply: torch.Tensor
    """[n] int64 stones on the board."""
    policy: torch.Tensor
    """[n, cols] float32 policy target (sums to 1 over legal columns)."""
    value: torch.Tensor
    """[n] float32 value target for the side to move, in -1..1."""
    proven: torch.Tensor
    """[n] bool: the value target is exact (MCTS-Solver proved the root), not a z/q estimate."""

    def __len__(self) -> int:
        return self.current.shape[0]

    @staticmethod
    def cat(parts: list[Samples]) -> Samples:
        return Samples(*(torch.cat([getattr(p, f) for p in parts]) for f in Samples.__dataclass_fields__))

    def take(self, idx: torch.Tensor) -> Samples:
        return Samples(*(getattr(self, f)[idx] for f in Samples.__dataclass_fields__))

    def boards(self, geometry: Geometry) -> Boards:
        b = Boards(len(self), geometry, self.current.device)
        b.current, b.mask, b.ply = self.current, self.mask, self.ply
        return b


def self_play(
    net: PolicyValueNet,
    config: AlphaZeroConfig,
    generator: torch.Generator,
    geometry: Geometry = STANDARD,
    solver: Solver | None = None,
) -> tuple[Samples, dict[str, float]]:
    """Play `config.games` searched self-play games; returns every decision with its targets
    and statistics (first player's W/D/L, game length, share of proven roots). With
    `config.solve_from`, `solver` rescores the targets (one is made when none is given), and
    with `config.search.probe_from` the search probes it too."""
    if solver is None and (config.solve_from or config.search.probe_from):
        solver = Solver(geometry, max_nodes=config.solve_nodes)
    device = next(net.parameters()).device
    boards = Boards(config.games, geometry, device)
    opening = torch.randint(
        config.opening_plies, config.opening_plies_max + 1, (config.games,), generator=generator
    ).to(device)
    play_opening(boards, opening, generator)
    sampled_until = (opening + config.temperature_plies).cpu()
    scfg = replace(config.search, max_trees=config.games)  # every game in one batch
    rows: list[tuple[torch.Tensor, ...]] = []
    proven_roots = decisions = 0
    net.eval()
    while not bool(boards.done.all()):
        live = torch.nonzero(~boards.done).squeeze(1)
        r = search(net, boards.select(live), scfg, generator, solver)
        probs = torch.from_numpy(r.probs).float()
        cols = torch.from_numpy(r.columns)
        early = torch.nonzero(boards.ply[live].cpu() < sampled_until[live.cpu()]).squeeze(1)
        if len(early):
            cols[early] = torch.multinomial(probs[early], 1, generator=generator).squeeze(1)
        proven = torch.from_numpy(r.proven).float()  # NaN where search proved nothing
        rows.append(
            (
                live.cpu(),
                boards.current[live].cpu(),
                boards.mask[live].cpu(),
                boards.ply[live].cpu(),
                probs,
                torch.from_numpy(r.values).float(),
                proven,
            )
        )
        proven_roots += int((~torch.isnan(proven)).sum())
        decisions += len(live)
        full = torch.zeros(len(boards), dtype=torch.int64, device=device)
        full[live] = cols.to(device)
        boards.play(full)

    game, current, mask, ply, policy, q, exact = (torch.cat(x) for x in zip(*rows, strict=True))
    result = boards.result.cpu().float()  # for the first player
    solve_stats: dict[str, float] = {}
    if config.solve_from:
        start = time.perf_counter()
        assert solver is not None  # made above
        solved = _rescore(solver, config, game, current, mask, ply)
        exact = torch.where(torch.isnan(solved), exact, solved)
        result = _adjudicate(result, game, ply, solved)
        solve_stats = {
            "selfplay/solved": float(
                (~torch.isnan(solved)).sum() / max(int((ply >= config.solve_from).sum()), 1)
            ),
            "charts/solve_seconds": time.perf_counter() - start,
        }
    result = result[game]
    z = torch.where(ply % 2 == 0, result, -result)  # the outcome for the side to move
    value = torch.where(torch.isnan(exact), (1 - config.q_weight) * z + config.q_weight * q, exact)
    samples = Samples(current, mask, ply, policy, value, ~torch.isnan(exact))
    wdl = WDL.of(boards.result.cpu().numpy())
    stats = {
        "vs/self/win": wdl.win / wdl.games,
        "vs/self/draw": wdl.draw / wdl.games,
        "vs/self/loss": wdl.loss / wdl.games,
        "selfplay/plies": float(boards.ply.float().mean()),
        "selfplay/proven_roots": proven_roots / max(decisions, 1),
    } | solve_stats
    return samples, stats


def _rescore(
    solver: Solver,
    config: AlphaZeroConfig,
    game: torch.Tensor,
    current: torch.Tensor,
    mask: torch.Tensor,
    ply: torch.Tensor,
) -> torch.Tensor:
    """Exact result (+1, 0, -1 for the side to move) of each decision at or past
    `config.solve_from` that the solver settles within its budget; NaN elsewhere. The latest
    plies go first, so the table built on them speeds up the earlier ones."""
    solved = torch.full((len(ply),), float("nan"))
    late = torch.nonzero(ply >= config.solve_from).squeeze(1)
    order = late[torch.argsort(ply[late], descending=True, stable=True)]
    for i in order.tolist():
        pos = Position(int(current[i]), int(mask[i]), solver.geometry)
        value = solver.score(pos, weak=True)
        if value is not None:
            solved[i] = float(value)
    return solved


def _adjudicate(
    result: torch.Tensor, game: torch.Tensor, ply: torch.Tensor, solved: torch.Tensor
) -> torch.Tensor:
    """Each game's result (for the first player) replaced by the exact result of its first
    settled decision, where it has one."""
    out = result.clone()
    settled = torch.nonzero(~torch.isnan(solved)).squeeze(1)
    seen: set[int] = set()
    for i in settled[torch.argsort(ply[settled], stable=True)].tolist():  # earliest first
        g = int(game[i])
        if g not in seen:
            seen.add(g)
            out[g] = solved[i] if int(ply[i]) % 2 == 0 else -solved[i]
    return out


def fit(
    net: PolicyValueNet,
    optimizer: torch.optim.Optimizer,
    window: Samples,
    steps: int,
    config: AlphaZeroConfig,
    generator: torch.Generator,
    geometry: Geometry = STANDARD,
) -> dict[str, float]:
    """`steps` gradient steps on uniform minibatches of the replay window; mean losses."""
    device = next(net.parameters()).device
    net.train()
    totals = {"policy": 0.0, "value": 0.0, "entropy": 0.0}
    for _ in range(steps):
        idx = torch.randint(len(window), (min(config.batch_size, len(window)),), generator=generator)
        batch = window.take(idx)
        boards = batch.boards(geometry)
        planes, legal = boards.planes(), boards.legal()
        policy, value = batch.policy, batch.value
        if config.mirror:
            planes = torch.cat((planes, mirror_planes(planes)))
            legal = torch.cat((legal, legal.flip(1)))
            policy = torch.cat((policy, policy.flip(1)))
            value = torch.cat((value, value))
        logits, predicted = net(planes.to(device), legal.to(device))
        logp = torch.log_softmax(logits, 1)
        policy_loss = -(policy.to(device) * logp).sum(1).mean()
        value_loss = F.mse_loss(predicted, value.to(device))
        loss = policy_loss + value_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        totals["policy"] += policy_loss.item()
        totals["value"] += value_loss.item()
        totals["entropy"] += float(-(logp.exp() * logp).sum(1).mean().detach())
    net.eval()
    return {k: v / max(steps, 1) for k, v in totals.items()}


def train(
    net: PolicyValueNet,
    config: AlphaZeroConfig,
    seed: int,
    geometry: Geometry = STANDARD,
    optimizer: torch.optim.Optimizer | None = None,
    on_iteration: Callable[[int, dict[str, float]], None] | None = None,
) -> torch.optim.Optimizer:
    """Run `config.iterations` self-play-and-fit iterations in place; returns the optimizer.

    `on_iteration(i, metrics)` receives ``losses/{policy,value,entropy}``,
    ``vs/self/{win,draw,loss}`` (the first player's), ``selfplay/*`` and ``charts/*``.
    """
    if optimizer is None:
        optimizer = torch.optim.Adam(net.parameters())
    for group in optimizer.param_groups:  # a resumed optimizer keeps its moments, not its settings
        group["lr"], group["weight_decay"] = config.learning_rate, config.weight_decay
    gen = torch.Generator().manual_seed(seed)
    window: list[Samples] = []
    # one solver for the whole run: its table carries over between iterations
    solver = (
        Solver(geometry, max_nodes=config.solve_nodes)
        if config.solve_from or config.search.probe_from
        else None
    )
    for it in range(config.iterations):
        start = time.perf_counter()
        samples, stats = self_play(net, config, gen, geometry, solver)
        played = time.perf_counter() - start
        window = (window + [samples])[-config.replay_iterations :]
        steps = max(1, math.ceil(config.epochs * len(samples) / config.batch_size))
        losses = fit(net, optimizer, Samples.cat(window), steps, config, gen, geometry)
        metrics = {f"losses/{k}": v for k, v in losses.items()} | stats
        metrics["charts/decisions"] = float(len(samples))
        metrics["charts/selfplay_seconds"] = played
        metrics["charts/seconds"] = time.perf_counter() - start
        if on_iteration is not None:
            on_iteration(it, metrics)
    return optimizer
