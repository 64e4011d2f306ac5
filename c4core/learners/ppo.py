"""PPO self-play: the learner plays a list of opponents (and itself) and improves by clipped PPO.

One iteration collects `games` games of any game (`c4core.games`) in a single batch, split
evenly over the opponents; the learner moves first in half of each opponent's games, and plays
both sides of the self-play games. Each learner decision stores its observation, legal mask,
action, log-prob and value. Rewards come only at the end (+1 win, 0 draw, -1 loss), and
advantages are GAE(lambda) over each player's own decisions in order, bootstrapping from the
value head (Schulman et al. 2016), so a player who moves twice in a row (Dots and Boxes) simply
has two decisions in a row; the update is PPO-clip with a value baseline and an entropy bonus
(Schulman et al. 2017), with names as in CleanRL. Symmetry augmentation (`PPOConfig.mirror`)
adds every decision's images under the game's symmetries (Connect Four's left-right mirror),
old log-probs of the images taken from the pre-update network so the ratio stays exact.

A learner can train data-parallel over `PPOConfig.ranks` processes (`c4core.learners.ranks`), as PyTorch's
DistributedDataParallel does: each rank collects its share of the games, and every gradient
step sums the ranks' gradients, each weighted by its share of the step's decisions, so the step
follows the mean loss over all of them. Every rank then takes the same step from the same
parameters, and the replicas stay equal without a broadcast.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from c4core.config import PPOConfig
from c4core.evaluation.match import WDL
from c4core.games import ConnectFour, Game, Symmetry, returns_of
from c4core.games.players import Player, play_opening
from c4core.learners.net import PolicyValueNet
from c4core.learners.ranks import ALONE, Ranks


@dataclass
class Rollout:
    """One iteration's learner decisions, flattened, with advantages and returns."""

    planes: torch.Tensor
    legal: torch.Tensor
    actions: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    on_policy: torch.Tensor | None = None
    """False for augmented (mirrored) decisions; None means all were sampled."""

    def __len__(self) -> int:
        return len(self.actions)


def collect(
    net: PolicyValueNet,
    opponents: Sequence[Player | None],
    games: int,
    generator: torch.Generator,
    game: Game = ConnectFour(),
    gae_lambda: float = 0.9,
    opening_plies: int = 0,
) -> tuple[Rollout, dict[str, WDL]]:
    """Play `games` games of the learner against `opponents` (None stands for itself).

    Returns the rollout and the learner's W/D/L against each opponent (``"self"`` for None).
    """
    if not opponents:
        raise ValueError("the learner needs at least one opponent")
    per = max(2, (games // len(opponents)) // 2 * 2)
    n = per * len(opponents)
    device = next(net.parameters()).device
    boards = game.new_batch(n, device)
    opp_id = torch.arange(n, device=device) // per
    is_self = torch.zeros(n, dtype=torch.bool, device=device)
    for j, opp in enumerate(opponents):
        if opp is None:
            is_self |= opp_id == j
    play_opening(boards, opening_plies, generator)
    learner_seat = torch.arange(n, device=device) % 2  # the learner is player 0 in even games
    steps: list[tuple[torch.Tensor, ...]] = []
    net.eval()
    with torch.no_grad():
        while not bool(boards.done.all()):
            to_move = boards.to_move()
            learner_turn = ((to_move == learner_seat) | is_self) & ~boards.done
            cols = torch.zeros(n, dtype=torch.int64, device=device)
            idx = torch.nonzero(learner_turn).squeeze(1)
            if len(idx):
                sub = boards.select(idx)
                planes, legal = sub.observation(), sub.legal()
                logits, value = net(planes, legal)
                probs = torch.softmax(logits, 1)
                action = torch.multinomial(probs.cpu(), 1, generator=generator).squeeze(1).to(device)
                logp = torch.log_softmax(logits, 1).gather(1, action[:, None]).squeeze(1)
                # a trajectory is one player's decisions in one game
                steps.append((idx * 2 + to_move[idx], planes, legal, action, logp, value))
                cols[idx] = action
            for j, opp in enumerate(opponents):
                if opp is None:
                    continue
                idx = torch.nonzero(~learner_turn & ~boards.done & (opp_id == j)).squeeze(1)
                if len(idx):
                    cols[idx] = opp.act(boards.select(idx), generator).to(device)
            boards.play(cols)

    traj, planes, legal, actions, logprobs, values = (torch.cat(x) for x in zip(*steps, strict=True))
    returns = boards.returns()
    # for the player who made each decision: the outcome, or the margin return of a net that learns it
    reward = returns_of(boards, net.by_margin)[traj // 2, traj % 2]
    advantages = gae(traj, values, reward, gae_lambda)

    stats: dict[str, WDL] = {}
    learner_result = returns[torch.arange(n, device=device), learner_seat].cpu().numpy()
    for j, opp in enumerate(opponents):
        name = "self" if opp is None else opp.name
        stats[name] = WDL.of(learner_result[(opp_id == j).cpu().numpy()])
    rollout = Rollout(planes, legal, actions, logprobs, values, advantages, advantages + values)
    return rollout, stats


def gae(traj: torch.Tensor, values: torch.Tensor, reward: torch.Tensor, lam: float) -> torch.Tensor:
    """GAE(lambda) with gamma = 1 over decisions given in chronological order per trajectory.

    `traj` names each decision's trajectory, `reward` is that trajectory's final reward. Only
    the last decision of a trajectory sees the reward; the others bootstrap from the next value.
    """
    order = torch.sort(traj, stable=True).indices
    t_sorted, v = traj[order], values[order]
    r = reward[order]
    last = torch.ones_like(t_sorted, dtype=torch.bool)
    last[:-1] = t_sorted[1:] != t_sorted[:-1]
    next_v = torch.empty_like(v)
    next_v[:-1] = v[1:]
    next_v = torch.where(last, r, next_v)
    delta = next_v - v
    # backward recursion A_t = delta_t + lam * A_{t+1}, restarted at each trajectory's end
    adv_sorted = torch.empty_like(v)
    d, lst = delta.cpu().numpy(), last.cpu().numpy()
    out = np.empty_like(d)
    acc = 0.0
    for i in range(len(d) - 1, -1, -1):
        acc = d[i] + (0.0 if lst[i] else lam * acc)
        out[i] = acc
    adv_sorted = torch.from_numpy(out).to(v.device)
    adv = torch.empty_like(v)
    adv[order] = adv_sorted
    return adv


def ppo_update(
    net: PolicyValueNet,
    optimizer: torch.optim.Optimizer,
    batch: Rollout,
    config: PPOConfig,
    generator: torch.Generator,
    ranks: Ranks = ALONE,
    game: Game = ConnectFour(),
) -> dict[str, float]:
    """Clipped-PPO epochs over one rollout of `game`; returns the mean losses over its gradient
    steps.

    Data-parallel (`ranks`), every rank takes the same number of steps, each over its own
    share of its decisions, and the advantages are normalized over the step's decisions on
    all ranks."""
    if config.mirror:
        batch = _with_images(net, batch, game.symmetries[1:])
    net.train()
    n = len(batch)
    params = [p for p in net.parameters() if p.requires_grad]
    if ranks.world > 1:
        sizes = torch.zeros(ranks.world, dtype=torch.int64)
        sizes[ranks.rank] = n
        sizes = ranks.sum(sizes)
        steps = max(1, -(-int(sizes.sum()) // config.minibatch_size))
        # torch.tensor_split gives the first n % steps chunks one more row
        step_sizes = [int((sizes // steps + (j < sizes % steps)).sum()) for j in range(steps)]
    stats: dict[str, list[float]] = {k: [] for k in ("policy", "value", "entropy", "approx_kl", "clipfrac")}
    for _ in range(config.update_epochs):
        epoch_kl: list[float] = []
        perm = torch.randperm(n, generator=generator).to(batch.actions.device)
        chunks = perm.split(config.minibatch_size) if ranks.world == 1 else perm.tensor_split(steps)
        for j, mb in enumerate(chunks):
            adv = batch.advantages[mb]
            if ranks.world == 1:
                adv = (adv - adv.mean()) / (adv.std() + 1e-8) if len(mb) > 1 else adv
                share = 1.0
            else:
                total = step_sizes[j]
                moments = ranks.sum(torch.stack((adv.sum(), (adv * adv).sum())).double())
                mean = moments[0] / total
                std = ((moments[1] - total * mean * mean) / max(total - 1, 1)).clamp(min=0).sqrt()
                adv = ((adv - mean) / (std + 1e-8)).to(adv.dtype) if total > 1 else adv
                share = len(mb) / total
            optimizer.zero_grad()
            if len(mb):
                logits, head = net.heads(batch.planes[mb], batch.legal[mb])
                logp_all = torch.log_softmax(logits, 1)
                logp = logp_all.gather(1, batch.actions[mb, None]).squeeze(1)
                log_ratio = logp - batch.logprobs[mb]
                ratio = log_ratio.exp()
                pg_loss = torch.max(
                    -adv * ratio, -adv * ratio.clamp(1 - config.clip_coef, 1 + config.clip_coef)
                )
                if config.dual_clip is not None:
                    pg_loss = torch.where(adv < 0, torch.min(pg_loss, -adv * config.dual_clip), pg_loss)
                pg_loss = pg_loss.mean()
                v_loss = 0.5 * net.value_loss(head, batch.returns[mb])
                probs = logp_all.exp()
                entropy = -(probs * logp_all.clamp(min=-30)).sum(1).mean()
                loss = pg_loss - config.ent_coef * entropy + config.vf_coef * v_loss
                (loss * share if ranks.world > 1 else loss).backward()
            if ranks.world > 1:
                _sum_gradients(params, ranks)
            torch.nn.utils.clip_grad_norm_(net.parameters(), config.max_grad_norm)
            optimizer.step()
            if not len(mb):
                continue
            with torch.no_grad():
                stats["policy"].append(pg_loss.item())
                stats["value"].append(v_loss.item())
                stats["entropy"].append(entropy.item())
                # KL and clip fraction describe the sampled policy's drift, so skip mirrored rows
                sampled = batch.on_policy[mb] if batch.on_policy is not None else slice(None)
                r, lr = ratio[sampled], log_ratio[sampled]
                epoch_kl.append(((r - 1) - lr).mean().item())
                stats["approx_kl"].append(epoch_kl[-1])
                stats["clipfrac"].append(((r - 1).abs() > config.clip_coef).float().mean().item())
        kl = ranks.mean([float(np.mean(epoch_kl)) if epoch_kl else 0.0])[0]
        if config.target_kl is not None and kl > config.target_kl:
            break  # every rank sees the same mean, so all stop together
    net.eval()
    means = [float(np.mean(v)) if v else 0.0 for v in stats.values()]
    return dict(zip(stats, ranks.mean(means), strict=True))


def _sum_gradients(params: list[torch.nn.Parameter], ranks: Ranks) -> None:
    """Each parameter's gradient summed over the ranks, in one all-reduce (a rank whose step had
    no decisions of its own adds zeros)."""
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    flat = ranks.sum(torch.cat([p.grad.reshape(-1) for p in params]))
    for p, g in zip(params, flat.split([p.numel() for p in params]), strict=True):
        p.grad.copy_(g.view_as(p))


def _with_images(net: PolicyValueNet, batch: Rollout, images: Sequence[Symmetry]) -> Rollout:
    """`batch` and its images under `images`, whose old log-probs come from `net` as it is."""
    parts = [batch]
    for symmetry in images:
        planes = symmetry.observation(batch.planes)
        legal = symmetry.policy(batch.legal)
        actions = symmetry.action(batch.actions)
        with torch.no_grad():
            logits, _ = net(planes, legal)
            logprobs = torch.log_softmax(logits, 1).gather(1, actions[:, None]).squeeze(1)
        parts.append(Rollout(planes, legal, actions, logprobs, batch.values, batch.advantages, batch.returns))
    sampled = torch.ones_like(batch.actions, dtype=torch.bool)
    on_policy = torch.cat((sampled, *(~sampled for _ in images)))
    return Rollout(
        *(torch.cat([getattr(p, f) for p in parts]) for f in _ROLLOUT_TENSORS), on_policy=on_policy
    )


_ROLLOUT_TENSORS = ("planes", "legal", "actions", "logprobs", "values", "advantages", "returns")


def train(
    net: PolicyValueNet,
    config: PPOConfig,
    opponents: Sequence[Player | None],
    seed: int,
    game: Game = ConnectFour(),
    optimizer: torch.optim.Optimizer | None = None,
    on_iteration: Callable[[int, dict[str, float]], None] | None = None,
    ranks: Ranks = ALONE,
) -> torch.optim.Optimizer:
    """Run `config.iterations` PPO iterations in place; returns the optimizer (to checkpoint).

    `on_iteration(i, metrics)` receives namespaced metrics: ``losses/*`` and
    ``vs/<opponent>/{win,draw,loss}`` rates, plus ``charts/seconds``. Data-parallel, every rank
    calls this with the same network, optimizer state and opponents, and `config.ranks` of
    them; each plays its share of the games, and the metrics count every rank's games.
    """
    if ranks.world != config.ranks:
        raise ValueError(f"the PPO config asks for {config.ranks} ranks, and {ranks.world} train")
    if optimizer is None:
        optimizer = torch.optim.Adam(net.parameters(), lr=config.learning_rate)
    gen = torch.Generator().manual_seed(ranks.seed(seed))
    for it in range(config.iterations):
        start = time.perf_counter()
        games = config.games // ranks.world
        rollout, wdl = collect(net, opponents, games, gen, game, config.gae_lambda, config.opening_plies)
        losses = ppo_update(net, optimizer, rollout, config, gen, ranks, game)
        metrics = {f"losses/{k}": v for k, v in losses.items()}
        # every rank's games and decisions, in one all-reduce: W/D/L rows, then the decisions
        rows = [[r.win, r.draw, r.loss] for r in wdl.values()] + [[len(rollout), 0, 0]]
        counts = ranks.sum(torch.tensor(rows))
        for name, (win, draw, loss) in zip(wdl, counts[:-1].tolist(), strict=True):
            games = win + draw + loss
            metrics[f"vs/{name}/win"] = win / games
            metrics[f"vs/{name}/draw"] = draw / games
            metrics[f"vs/{name}/loss"] = loss / games
        metrics["charts/decisions"] = float(counts[-1, 0])
        metrics["charts/seconds"] = time.perf_counter() - start
        if on_iteration is not None:
            on_iteration(it, metrics)
    return optimizer
